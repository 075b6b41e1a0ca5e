// scripts/build/cleanup-on-signal.mjs: a build's temporary folder is gone after SIGINT, SIGTERM and SIGHUP, after its
// children (a real process group, stopped by the signal) have ended, and the build exits 130, 143 and 129; released,
// the guard removes the folder and stops listening. Each signal is sent to a real Node process using the guard.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanupOnSignal, STOP_SIGNALS, signalExitCode } from '../../scripts/build/cleanup-on-signal.mjs';
import { root } from '../support/helpers.js';

let scratch: string;
beforeAll(() => {
  scratch = mkdtempSync(path.join(tmpdir(), 'mcs-cleanup-test-'));
});
afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

const guardUrl = pathToFileURL(path.join(root, 'scripts', 'build', 'cleanup-on-signal.mjs')).href;

/**
 * A stand-in build: a temporary folder with a file in it, a detached `sleep` (its process group) that says how it
 * ended, both registered with the guard; "ready" once all is in place.
 */
const BUILD = `
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { cleanupOnSignal } from ${JSON.stringify(guardUrl)};
const guard = cleanupOnSignal({ log: (line) => process.stderr.write('build: ' + line + '\\n') });
const work = guard.folder(mkdtempSync(path.join(process.env.WORK_PARENT, 'work-')));
writeFileSync(path.join(work, 'object.o'), Buffer.alloc(4096));
const child = guard.child(spawn('sleep', ['600'], { detached: true, stdio: 'ignore' }));
child.on('close', (code, signal) => process.stderr.write('sleep ended: ' + signal + '\\n'));
child.on('spawn', () => process.stdout.write(work + '\\n'));
`;

/** Runs the stand-in build, sends `signal` once it is ready; its exit code, stderr and temporary folder. */
function stopBuild(signal: NodeJS.Signals): Promise<{ code: number | null; stderr: string; work: string }> {
  const parent = mkdtempSync(path.join(scratch, 'parent-'));
  const build = spawn(process.execPath, ['--input-type=module', '-e', BUILD], {
    env: { ...process.env, WORK_PARENT: parent },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  build.stderr.on('data', (c) => {
    stderr += c;
  });
  build.stdout.on('data', (c) => {
    stdout += c;
    if (stdout.endsWith('\n')) build.kill(signal);
  });
  return new Promise((resolve) => build.on('close', (code) => resolve({ code, stderr, work: stdout.trim() })));
}

describe('a build stopped by a signal', () => {
  for (const signal of STOP_SIGNALS) {
    it(`${signal}: stops the children, removes the folder, exits ${signalExitCode(signal)}`, async () => {
      const { code, stderr, work } = await stopBuild(signal);
      expect(work).toMatch(/work-\w{6}$/);
      expect(existsSync(work)).toBe(false);
      expect(code).toBe({ SIGINT: 130, SIGTERM: 143, SIGHUP: 129 }[signal]);
      // The child ended by the same signal before the folder was removed.
      expect(stderr).toBe(`sleep ended: ${signal}\nbuild: stopped by ${signal}; removed ${work}\n`);
    }, 30_000);
  }
});

describe('the guard in this process', () => {
  it('released, removes the folders and stops listening; nothing else is touched', () => {
    const before = STOP_SIGNALS.map((s) => process.listenerCount(s));
    const guard = cleanupOnSignal({ exit: () => expect.unreachable('no signal was sent') });
    expect(STOP_SIGNALS.map((s) => process.listenerCount(s))).toEqual(before.map((n) => n + 1));
    const work = guard.folder(mkdtempSync(path.join(scratch, 'released-')));
    mkdirSync(path.join(work, 'build'));
    writeFileSync(path.join(work, 'build', 'a.o'), 'x');
    const kept = mkdtempSync(path.join(scratch, 'kept-'));
    expect(guard.stopping()).toBe(null);
    guard.release();
    expect(existsSync(work)).toBe(false);
    expect(existsSync(kept)).toBe(true);
    expect(STOP_SIGNALS.map((s) => process.listenerCount(s))).toEqual(before);
  });

  it('exit codes are 128 + the signal number, as a shell reports them', () => {
    expect(STOP_SIGNALS.map((s) => [s, signalExitCode(s)])).toEqual([
      ['SIGINT', 130],
      ['SIGTERM', 143],
      ['SIGHUP', 129],
    ]);
    expect(() => signalExitCode('SIGNOPE' as NodeJS.Signals)).toThrow('SIGNOPE is not a signal');
  });
});
