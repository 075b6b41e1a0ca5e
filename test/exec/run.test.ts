// runWithInjector in-process: the child is a real process with the simulated build's injector preloaded (Linux), but
// the code that starts it, reads its status fd, writes the fallback trace and forwards signals runs in this process.
// The simulated Metal answers from the stock Tahoe VM snapshot (one paravirtual device).

import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { ApplyWarning } from '../../lib/patch/apply.js';
import { MetalCapShimError, SpawnError } from '../../lib/core/errors.js';
import { INJECT_ENV, injectorPath } from '../../lib/exec/injector.js';
import { runWithInjector, type ExecOutcome } from '../../lib/exec/run.js';
import { resolveProfile } from '../../lib/patch/profiles.js';
import { buildConsumer, describeSim, requireSimBuild } from '../support/helpers.js';
import { useSimulation } from '../support/simulation.js';

const profile = resolveProfile('cua-release');
const SLICE = process.arch === 'x64' ? 'x86_64' : process.arch;
const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2'] as const;
const WARNING: ApplyWarning = { code: 'no-change', message: 'a warning prepareExec found, carried through' };

let tmp: string;
let consumer: string;
let injector: string;
let staticProgram: string;
let quiet: string;

/**
 * A static program (it ignores LD_PRELOAD, so the status fd is left for the program it starts) that sends its stdout
 * to /dev/null and execs its arguments: the consumer's JSON stays out of the test output.
 */
const QUIET_C = `#include <fcntl.h>
#include <unistd.h>
int main(int argc, char **argv) {
  (void)argc;
  dup2(open("/dev/null", O_WRONLY), 1);
  execv(argv[1], argv + 1);
  return 127;
}
`;
let dirs = 0;

function folder(): string {
  const dir = path.join(tmp, `d${dirs++}`);
  execFileSync('mkdir', [dir]);
  return dir;
}

const sh = (script: string, extra: { traceFile?: string } = {}) => ({
  profile,
  command: 'sh',
  args: ['-c', script],
  ...extra,
});

/**
 * What an outcome holds when the program loaded the injector and reported nothing else: the base the tests below
 * change. Its one process reports the classes in `fields` (its pid is the child's, unknown here).
 */
function outcome(fields: Partial<ExecOutcome>): ExecOutcome {
  return {
    exitCode: 0,
    signal: null,
    injectorLoaded: true,
    injectorSlice: SLICE,
    patchedClasses: [],
    injectorErrors: [],
    processes: [
      { pid: expect.any(Number) as number, slice: SLICE, patchedClasses: fields.patchedClasses ?? [], errors: [] },
    ],
    warnings: [WARNING],
    mlxArchitecture: null,
    ...fields,
  };
}

/** The outcome of a run in which nothing loaded the injector. */
const NOTHING_LOADED = {
  injectorLoaded: false,
  injectorSlice: null,
  patchedClasses: [],
  injectorErrors: [],
  processes: [],
  mlxArchitecture: null,
};

describeSim('runWithInjector, in-process over the simulated injector', () => {
  useSimulation('vz-guest-m1-ultra-tahoe-stock');
  beforeAll(() => {
    requireSimBuild();
    consumer = buildConsumer();
    injector = injectorPath()!;
    tmp = realpathSync(mkdtempSync(path.join(tmpdir(), 'mcs-exec-run-')));
    const dir = folder();
    writeFileSync(path.join(dir, 'static.c'), 'int main(void) { return 3; }\n');
    staticProgram = path.join(dir, 'static');
    execFileSync('clang-14', ['-static', path.join(dir, 'static.c'), '-o', staticProgram]);
    writeFileSync(path.join(dir, 'quiet.c'), QUIET_C);
    quiet = path.join(dir, 'quiet');
    execFileSync('clang-14', ['-static', path.join(dir, 'quiet.c'), '-o', quiet]);
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('a program that uses Metal: loaded, its device class patched, the trace written by it (an old trace removed first)', async () => {
    const trace = path.join(folder(), 'trace.json');
    writeFileSync(trace, 'stale');
    const r = await runWithInjector({ profile, command: quiet, args: [consumer], traceFile: trace }, injector, [
      WARNING,
    ]);
    expect(r).toEqual(outcome({ patchedClasses: ['AppleParavirtDevice'] }));
    const written = JSON.parse(readFileSync(trace, 'utf8'));
    expect(written.profileApplied).toBe(true);
    expect(written.patchedClasses).toEqual(['AppleParavirtDevice']);
  });

  it('the exit code is passed through, and a death by signal is reported as the signal', async () => {
    expect(await runWithInjector(sh('exit 7'), injector, [WARNING])).toEqual(outcome({ exitCode: 7 }));
    expect(await runWithInjector(sh('kill -TERM $$'), injector, [WARNING])).toEqual(
      outcome({ exitCode: null, signal: 'SIGTERM' }),
    );
  });

  it('the child gets the injector as LD_PRELOAD, and no trace folder without --trace (not even one we inherited)', async () => {
    const out = path.join(folder(), 'env.txt');
    const saved = { trace: process.env[INJECT_ENV.traceFolder] };
    process.env[INJECT_ENV.traceFolder] = path.join(tmp, 'inherited');
    try {
      const r = await runWithInjector(
        sh(`printf '%s|%s' "$LD_PRELOAD" "\${${INJECT_ENV.traceFolder}-unset}" > '${out}'`),
        injector,
        [],
      );
      expect(r).toEqual(outcome({ warnings: [] }));
    } finally {
      if (saved.trace === undefined) delete process.env[INJECT_ENV.traceFolder];
      else process.env[INJECT_ENV.traceFolder] = saved.trace;
    }
    expect(readFileSync(out, 'utf8')).toBe(`${injector}|unset`);
  });

  it('the child’s stdin, stdout and stderr are ours, with the injector and without (only fd 3 is the injector’s)', async () => {
    const ours = [0, 1, 2].map((fd) => readlinkSync(`/proc/self/fd/${fd}`));
    for (const which of [injector, null]) {
      const out = path.join(folder(), 'fds');
      // Through a pipe: dash applies a simple command's redirection to the shell itself while the command runs.
      await runWithInjector(sh(`readlink /proc/$$/fd/0 /proc/$$/fd/1 /proc/$$/fd/2 | cat > '${out}'`), which, []);
      expect(readFileSync(out, 'utf8').trim().split('\n')).toEqual(ours);
    }
  });

  it('a program that never obtains a device still leaves a trace, saying whether the injector loaded', async () => {
    const loaded = path.join(folder(), 'trace.json');
    const r = await runWithInjector({ profile, command: 'true', args: [], traceFile: loaded }, injector, []);
    expect(r).toEqual(outcome({ warnings: [] }));
    expect(JSON.parse(readFileSync(loaded, 'utf8'))).toEqual({
      pid: expect.any(Number),
      profileApplied: true,
      patchedClasses: [],
      trace: [],
    });
    // A static program ignores LD_PRELOAD: the injector never loaded.
    const notLoaded = path.join(folder(), 'trace.json');
    const s = await runWithInjector({ profile, command: staticProgram, args: [], traceFile: notLoaded }, injector, []);
    expect(s).toEqual({ exitCode: 3, signal: null, ...NOTHING_LOADED, warnings: [] });
    const written = JSON.parse(readFileSync(notLoaded, 'utf8'));
    expect(written).toEqual({ pid: expect.any(Number), profileApplied: false, patchedClasses: [], trace: [] });
    expect(written.pid).toBeGreaterThan(0);
    expect(readFileSync(notLoaded, 'utf8').endsWith('}\n')).toBe(true);
  });

  it('a trace that cannot be written is an injector error, not a crash', async () => {
    const dir = folder();
    const trace = path.join(dir, 'trace.json');
    // rm is a second process that loads the injector (sh starts it), and reports too.
    const r = await runWithInjector(sh(`rm -r '${dir}'; exit 0`, { traceFile: trace }), injector, []);
    const loaded = { pid: expect.any(Number) as number, slice: SLICE, patchedClasses: [], errors: [] };
    expect(r).toEqual(
      outcome({
        warnings: [],
        // The folder checked before the run is gone: nothing is written, wherever its path leads now.
        injectorErrors: [
          `ERR_TRACE_FILE cannot write ${trace}: its folder ${dir} cannot be examined (ENOENT), so nothing is written there`,
        ],
        processes: [loaded, loaded],
      }),
    );
  });

  it('the unpatched run: no injector, no status, no warnings; the exit code or signal as it was', async () => {
    const out = path.join(folder(), 'env.txt');
    const r = await runWithInjector(sh(`printf '%s' "\${LD_PRELOAD-unset}" > '${out}'; exit 5`), null, [WARNING]);
    expect(r).toEqual({ exitCode: 5, signal: null, ...NOTHING_LOADED, warnings: [] });
    expect(readFileSync(out, 'utf8')).toBe(process.env.LD_PRELOAD ?? 'unset');
    expect(await runWithInjector(sh('kill -HUP $$'), null, [])).toEqual({
      exitCode: null,
      signal: 'SIGHUP',
      ...NOTHING_LOADED,
      warnings: [],
    });
  });

  it('the unpatched run with --trace: the trace says nothing was applied, replacing an old one; a write failure is an injector error', async () => {
    const dir0 = folder();
    const file = path.join(dir0, 'trace.json');
    const pidFile = path.join(dir0, 'pid');
    writeFileSync(file, '{"old":true}\n');
    const r = await runWithInjector(sh(`echo $$ > '${pidFile}'; exit 2`, { traceFile: file }), null, []);
    expect(r).toEqual({ exitCode: 2, signal: null, ...NOTHING_LOADED, warnings: [] });
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    expect(readFileSync(file, 'utf8')).toBe(
      `${JSON.stringify({ pid, profileApplied: false, patchedClasses: [], trace: [] })}\n`,
    );
    const dir = folder();
    const gone = path.join(dir, 'trace.json');
    expect(await runWithInjector(sh(`rm -r '${dir}'`, { traceFile: gone }), null, [])).toEqual({
      exitCode: 0,
      signal: null,
      ...NOTHING_LOADED,
      injectorErrors: [
        `ERR_TRACE_FILE cannot write ${gone}: its folder ${dir} cannot be examined (ENOENT), so nothing is written there`,
      ],
      warnings: [],
    });
  });

  it.each([
    ['with the injector', (): string | null => injector],
    ['unpatched', (): string | null => null],
  ] as const)(
    '%s: a missing program is ERR_COMMAND_NOT_FOUND, one that cannot be run ERR_SPAWN; no handler is left behind',
    async (_, which) => {
      // Without `program`, the command is resolved first, as prepareExec does.
      await expect(runWithInjector({ profile, command: 'no-such-command-xyz', args: [] }, which(), [])).rejects.toEqual(
        new SpawnError('ERR_COMMAND_NOT_FOUND', 'command not found: no-such-command-xyz'),
      );
      const data = path.join(folder(), 'data');
      writeFileSync(data, 'not a program\n');
      chmodSync(data, 0o644);
      await expect(runWithInjector({ profile, command: data, args: [] }, which(), [])).rejects.toEqual(
        new SpawnError('ERR_SPAWN', `cannot run ${data}: ${data} is not executable`),
      );
      // The file prepareExec checked is what spawn() is given; if it changed meanwhile, spawn()'s own error.
      await expect(
        runWithInjector({ profile, command: 'tool', program: path.join(tmp, 'gone'), args: [] }, which(), []),
      ).rejects.toEqual(
        new SpawnError('ERR_COMMAND_NOT_FOUND', `cannot run tool: spawn ${path.join(tmp, 'gone')} ENOENT`),
      );
      const e = await runWithInjector({ profile, command: 'tool', program: data, args: [] }, which(), []).catch(
        (err: unknown) => err,
      );
      expect(e).toBeInstanceOf(MetalCapShimError);
      expect(e).toMatchObject({ code: 'ERR_SPAWN', message: `cannot run tool: spawn ${data} EACCES` });
      expect(FORWARDED.map((s) => process.listenerCount(s))).toEqual([0, 0, 0, 0, 0, 0]);
      // spawn() itself throws on an argument it cannot pass (a NUL byte): the signal handlers, already in, come out.
      const bad = await runWithInjector({ profile, command: 'true', args: ['a\0b'] }, which(), []).catch(
        (err: unknown) => err,
      );
      expect(bad).toBeInstanceOf(MetalCapShimError);
      expect(bad).toMatchObject({
        code: 'ERR_SPAWN',
        message: "cannot run true: The argument 'args[0]' must be a string without null bytes. Received 'a\\x00b'",
      });
      expect(FORWARDED.map((s) => process.listenerCount(s))).toEqual([0, 0, 0, 0, 0, 0]);
    },
  );

  /**
   * Starts a child that exits 71/72/73 on SIGTERM/SIGHUP/SIGUSR2 (9 if none arrives within 10 s), sends `signal` to
   * this process once the child has set its traps, and returns the outcome. While the child runs, this process
   * handles every signal it forwards (so none of them kills it first); afterwards it handles none.
   */
  async function forwarded(which: string | null, signal: 'SIGTERM' | 'SIGHUP' | 'SIGUSR2'): Promise<number | null> {
    const ready = path.join(folder(), 'ready');
    const script = `trap 'exit 71' TERM; trap 'exit 72' HUP; trap 'exit 73' USR2; : > '${ready}'; i=0; while [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; exit 9`;
    const run = runWithInjector(sh(script), which, []);
    for (let i = 0; i < 1000 && !existsSync(ready); i++) await new Promise((r) => setTimeout(r, 10));
    expect(FORWARDED.map((s) => process.listenerCount(s))).toEqual([1, 1, 1, 1, 1, 1]);
    process.kill(process.pid, signal);
    const r = await run;
    expect(FORWARDED.map((s) => process.listenerCount(s))).toEqual([0, 0, 0, 0, 0, 0]);
    return r.exitCode;
  }

  it.each([
    ['SIGTERM', 71],
    ['SIGHUP', 72],
    ['SIGUSR2', 73],
  ] as const)(
    '%s sent to us reaches the child, with the injector and without',
    async (signal, code) => {
      expect(await forwarded(injector, signal)).toBe(code);
      expect(await forwarded(null, signal)).toBe(code);
    },
    30_000,
  );
});
