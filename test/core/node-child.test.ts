// How a Node child of the package starts in each host (lib/core/node-child.ts): the one decision doctor's runner and
// bench's node-llama-cpp side share. test/e2e/electron.test.ts runs it inside a stand-in Electron app.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { hostProcess, nodeChildStart, type HostProcess } from '../../lib/core/node-child.js';
import { runDoctorLive, runDoctorLiveSync } from '../../lib/doctor/run.js';
import { checkDoctorOptions } from '../../lib/doctor/options.js';
import { runChild } from '../../lib/bench/node-llama-cpp.js';
import { caught } from '../support/helpers.js';

const NODE: HostProcess = { electron: undefined, processType: undefined, sea: false, pkg: false };
const ELECTRON_MAIN: HostProcess = { ...NODE, electron: '33.0.0', processType: 'browser' };

describe('nodeChildStart', () => {
  it('reads this process: plain Node, no Electron, no single executable', () => {
    expect(hostProcess()).toEqual(NODE);
  });

  it('spawns process.execPath under Node, and under an Electron binary running as Node (its fuse is on)', () => {
    expect(nodeChildStart(NODE)).toEqual({ how: 'spawn' });
    expect(nodeChildStart(NODE, true)).toEqual({ how: 'spawn' });
    expect(nodeChildStart({ ...NODE, electron: '33.0.0' })).toEqual({ how: 'spawn' });
    expect(nodeChildStart({ ...NODE, electron: '33.0.0' }, true)).toEqual({ how: 'spawn' });
  });

  it("forks Electron's utility process from the main process, which nothing can wait on synchronously", () => {
    expect(nodeChildStart(ELECTRON_MAIN)).toEqual({ how: 'utility-process' });
    expect(nodeChildStart(ELECTRON_MAIN, true)).toEqual({
      how: 'none',
      why: "Electron's main process starts a Node child only asynchronously (utilityProcess.fork), and the app's own binary would start a second instance of the app",
    });
  });

  it("starts nothing in Electron's other processes", () => {
    for (const processType of ['renderer', 'utility', 'worker'])
      for (const wait of [false, true])
        expect(nodeChildStart({ ...ELECTRON_MAIN, processType }, wait)).toEqual({
          how: 'none',
          why: `Electron's ${processType} process cannot start a Node child (utilityProcess is the main process's), and the app's own binary would start a second instance of the app`,
        });
  });

  it('starts nothing in a single executable application or a pkg build, which run their embedded script', () => {
    for (const wait of [false, true]) {
      expect(nodeChildStart({ ...NODE, sea: true }, wait)).toEqual({
        how: 'none',
        why: 'a single executable application runs its embedded script, not ours',
      });
      expect(nodeChildStart({ ...NODE, pkg: true }, wait)).toEqual({
        how: 'none',
        why: 'a packaged executable (pkg) runs its embedded script, not ours',
      });
      // Electron's facts do not matter there.
      expect(nodeChildStart({ ...ELECTRON_MAIN, sea: true }, wait).how).toBe('none');
    }
  });

  it('a single executable application is read from node:sea', () => {
    const r = spawnSync(process.execPath, ['-e', "console.log(require('node:sea').isSea())"], { encoding: 'utf8' });
    // Node 20.12 and later have node:sea; a script given as an argument is never one.
    expect(r.stdout.trim()).toBe('false');
  });
});

describe('where nothing can start a child, every caller throws ERR_CHILD_HOST before starting anything', () => {
  const o = checkDoctorOptions({ probes: ['heap'], cache: false });
  const sea: HostProcess = { ...NODE, sea: true };

  it('doctor (asynchronous) rejects at once', async () => {
    const e = await runDoctorLive(o, undefined, sea).then(
      () => null,
      (err: { code: string; message: string }) => ({ code: err.code, message: err.message }),
    );
    expect(e).toEqual({
      code: 'ERR_CHILD_HOST',
      message:
        "doctor's probe runner cannot start here: a single executable application runs its embedded script, not ours. Run `npx metal-cap-shim doctor` once on this machine (profile auto then reads its cached result); in Electron, call doctor() from the main process.",
    });
  });

  it('doctor (synchronous, for auto) throws at once', () => {
    expect(caught(() => runDoctorLiveSync(o, 1, ELECTRON_MAIN))).toEqual({
      name: 'NativeError',
      code: 'ERR_CHILD_HOST',
      message:
        "doctor's probe runner cannot start here: Electron's main process starts a Node child only asynchronously (utilityProcess.fork), and the app's own binary would start a second instance of the app. Profile auto has no cached result to use instead: run `npx metal-cap-shim doctor` once on this machine, or apply a named profile (host-family).",
    });
  });

  it('bench --node-llama-cpp rejects at once (it reads the same decision)', async () => {
    const saved = (process as { type?: string }).type;
    const versions = process.versions as Record<string, string | undefined>;
    (process as { type?: string }).type = 'renderer';
    versions.electron = '33.0.0';
    try {
      const job = {
        cwd: '/',
        model: 'm.gguf',
        profile: null,
        force: false,
        promptTokens: 1,
        genTokens: 1,
        threads: null,
        repetitions: 1,
        text: 'x',
      };
      const e = await runChild(job).then(
        () => null,
        (err: { code: string; message: string }) => ({ code: err.code, message: err.message }),
      );
      expect(e).toEqual({
        code: 'ERR_CHILD_HOST',
        message:
          "bench --node-llama-cpp cannot start here: Electron's renderer process cannot start a Node child (utilityProcess is the main process's), and the app's own binary would start a second instance of the app. Run `npx metal-cap-shim bench` from a terminal.",
      });
    } finally {
      (process as { type?: string }).type = saved;
      delete versions.electron;
    }
  });
});
