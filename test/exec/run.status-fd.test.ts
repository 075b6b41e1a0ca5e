// The injector's status fd across processes: each process that loads the injector takes the fd only when it is the
// one exec's chain handed down (its parent is the pid named, the fd is a pipe or socket, and below exec's child the
// very object its parent held), reports under its own pid, and hands the fd down to the programs it starts. A planted
// fd 3 is never touched. Real processes with the simulated build's injector preloaded (Linux), over the stock Tahoe
// VM snapshot.

import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  INJECT_ENV,
  injectorPath,
  statusCollector,
  STATUS_LIMIT_BYTES,
  type InjectorProcess,
} from '../../lib/exec/injector.js';
import { runWithInjector, STATUS_DRAIN_MS } from '../../lib/exec/run.js';
import { encodeNativeProfile, resolveProfile } from '../../lib/patch/profiles.js';
import { buildConsumer, describeSim, requireSimBuild } from '../support/helpers.js';
import { useSimulation } from '../support/simulation.js';

const profile = resolveProfile('cua-release');
const SLICE = process.arch === 'x64' ? 'x86_64' : process.arch;
const PATCHED = ['AppleParavirtDevice'];

let tmp: string;
let consumer: string;
let injector: string;
let launcher: string;
let logLauncher: string;
let writer: string;
let late: string;

/**
 * A dynamic launcher (it loads the injector like any program): `launcher MODE PROGRAM ARGS…` with its stdout sent to
 * /dev/null. MODE `exec` replaces itself with PROGRAM (same pid, as a launcher that picks the real binary does);
 * `fork` starts PROGRAM as its child; `double` forks a child that, without exec, starts PROGRAM as its own child.
 */
const LAUNCHER_C = `#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
static int run(char **argv) {
  pid_t pid = fork();
  if (pid == 0) { execv(argv[0], argv); _exit(127); }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
int main(int argc, char **argv) {
  if (argc < 3) return 2;
  dup2(open("/dev/null", O_WRONLY), 1);
  if (strcmp(argv[1], "exec") == 0) { execv(argv[2], argv + 2); return 127; }
  if (strcmp(argv[1], "fork") == 0) return run(argv + 2);
  pid_t pid = fork();
  if (pid == 0) _exit(run(argv + 2));
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
`;

/**
 * A static launcher (it ignores LD_PRELOAD) that reopens fd 3 as its log, as such programs do, writes to it, starts
 * PROGRAM with fd 3 still the log, and writes to it again afterwards: `log-launcher LOG PROGRAM ARGS…`.
 */
const LOG_LAUNCHER_C = `#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
  if (argc < 3) return 2;
  close(3);
  if (open(argv[1], O_WRONLY | O_CREAT | O_APPEND, 0644) != 3) return 3;
  dprintf(3, "launcher\\n");
  pid_t pid = fork();
  if (pid == 0) { execv(argv[2], argv + 2); _exit(127); }
  int status = 0;
  waitpid(pid, &status, 0);
  if (dprintf(3, "launcher again\\n") < 0) return 4;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
`;

/** A static program that writes COUNT bytes of 'x' to fd 3, in lines of 1000: `writer COUNT`. */
const WRITER_C = `#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
  long left = argc > 1 ? atol(argv[1]) : 0;
  char line[1000];
  memset(line, 'x', sizeof line);
  line[sizeof line - 1] = '\\n';
  while (left > 0) {
    long n = left < (long)sizeof line ? left : (long)sizeof line;
    if (write(3, line, (size_t)n) != n) return 1;
    left -= n;
  }
  return 0;
}
`;

/**
 * A static program that exits at once, leaving a child of its own that waits DELAY_MS, then writes COUNT bytes of 'x'
 * to fd 3 (the status pipe it inherited) and exits: `late DELAY_MS COUNT`.
 */
const LATE_C = `#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
  if (argc < 3) return 2;
  long delay = atol(argv[1]), left = atol(argv[2]);
  if (fork() != 0) return 0;
  usleep((useconds_t)(delay * 1000));
  char line[1000];
  memset(line, 'x', sizeof line);
  line[sizeof line - 1] = '\\n';
  while (left > 0) {
    long n = left < (long)sizeof line ? left : (long)sizeof line;
    if (write(3, line, (size_t)n) != n) return 1;
    left -= n;
  }
  return 0;
}
`;

function compile(name: string, source: string, extra: string[] = []): string {
  const dir = path.join(tmp, name);
  execFileSync('mkdir', [dir]);
  writeFileSync(path.join(dir, `${name}.c`), source);
  execFileSync('clang-14', [...extra, path.join(dir, `${name}.c`), '-o', path.join(dir, name)]);
  return path.join(dir, name);
}

function loaded(patchedClasses: string[] = []): InjectorProcess {
  return { pid: expect.any(Number) as number, slice: SLICE, patchedClasses, errors: [] };
}

describeSim('the status fd across the processes of a run', () => {
  useSimulation('vz-guest-m1-ultra-tahoe-stock');
  beforeAll(() => {
    requireSimBuild();
    consumer = buildConsumer();
    injector = injectorPath()!;
    tmp = realpathSync(mkdtempSync(path.join(tmpdir(), 'mcs-exec-status-')));
    launcher = compile('launcher', LAUNCHER_C);
    logLauncher = compile('log-launcher', LOG_LAUNCHER_C, ['-static']);
    writer = compile('writer', WRITER_C, ['-static']);
    late = compile('late', LATE_C, ['-static']);
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('what a process the program left running writes to the status pipe after the program exited is read to its end', async () => {
    const r = await runWithInjector(
      { profile, command: late, args: ['100', String(STATUS_LIMIT_BYTES + 1000)] },
      injector,
      [],
    );
    expect(r.exitCode).toBe(0);
    expect(r.injectorErrors).toEqual([
      `ERR_STATUS_OVERFLOW the status pipe carried more than ${STATUS_LIMIT_BYTES} bytes; the rest was ignored`,
    ]);
  });

  it(`a process left running that holds the status pipe open keeps exec at most ${STATUS_DRAIN_MS} ms`, async () => {
    const started = Date.now();
    const r = await runWithInjector({ profile, command: late, args: ['5000', '1'] }, injector, []);
    const took = Date.now() - started;
    expect([r.exitCode, r.injectorErrors]).toEqual([0, []]);
    expect(took).toBeGreaterThanOrEqual(STATUS_DRAIN_MS);
    expect(took).toBeLessThan(4000);
  });

  it('a launcher that starts the program: both report under their own pids, and the program’s patch is reported', async () => {
    const r = await runWithInjector({ profile, command: launcher, args: ['fork', consumer] }, injector, []);
    expect(r.processes).toEqual([loaded(), loaded(PATCHED)]);
    expect(new Set(r.processes.map((p) => p.pid)).size).toBe(2);
    expect([r.exitCode, r.injectorLoaded, r.injectorSlice, r.patchedClasses, r.injectorErrors]).toEqual([
      0,
      true,
      SLICE,
      PATCHED,
      [],
    ]);
  });

  it('a launcher that execs the program in place: one pid, which loaded the injector twice and patched', async () => {
    const r = await runWithInjector({ profile, command: launcher, args: ['exec', consumer] }, injector, []);
    expect(r.processes).toEqual([loaded(PATCHED)]);
    expect(r.patchedClasses).toEqual(PATCHED);
  });

  it('a launcher whose fork child starts the program: the child hands the fd down under its own pid', async () => {
    const r = await runWithInjector({ profile, command: launcher, args: ['double', consumer] }, injector, []);
    expect(r.processes).toEqual([loaded(), loaded(PATCHED)]);
    expect(r.patchedClasses).toEqual(PATCHED);
  });

  it('a static launcher that reopened fd 3 as its log: the log is untouched and stays open, nothing is reported', async () => {
    const log = path.join(tmp, 'launcher.log');
    const helper = `echo "helper \${${INJECT_ENV.statusFd}-unset} \${${INJECT_ENV.statusPid}-unset}" >&3`;
    const r = await runWithInjector(
      { profile, command: logLauncher, args: [log, '/bin/sh', '-c', helper] },
      injector,
      [],
    );
    // The helper (sh, which loads the injector) saw a parent that is not exec: it left fd 3 alone and unset the
    // variables, so its own write to fd 3 reached the log, and so did the launcher's after it.
    expect(readFileSync(log, 'utf8')).toBe('launcher\nhelper unset unset\nlauncher again\n');
    expect([r.exitCode, r.injectorLoaded, r.processes, r.injectorErrors]).toEqual([0, false, [], []]);
  });

  it('a file as fd 3, with the parent named right: not a pipe or socket, so untouched', () => {
    const log = path.join(tmp, 'direct.log');
    writeFileSync(log, 'kept\n');
    // sh names itself as the parent and starts the consumer with fd 3 on the file (`; :` keeps it a child of sh).
    const script = `${statusVariables()} "$0" > /dev/null 3>>'${log}'; :`;
    const r = spawnSync('/bin/sh', ['-c', script, consumer], { env: injectedEnv({}), encoding: 'utf8' });
    expect([r.status, readFileSync(log, 'utf8')]).toEqual([0, 'kept\n']);
  });

  it('a pipe as fd 3 from a parent other than the one named, or not the object the parent held: untouched', () => {
    const out = path.join(tmp, 'fifo.out');
    const run = (variables: string) => {
      spawnSync('/bin/sh', ['-c', piped(variables, out), consumer], { env: injectedEnv({}) });
      return readFileSync(out, 'utf8');
    };
    expect(run(`${INJECT_ENV.statusFd}=3 ${INJECT_ENV.statusPid}=1`)).toBe('');
    expect(run(`${statusVariables()} ${INJECT_ENV.statusId}=1:1`)).toBe('');
    // The same pipe, the parent named right and no identity asked: taken.
    expect(run(statusVariables())).toMatch(new RegExp(`^\\d+ loaded ${SLICE}\\n\\d+ patched AppleParavirtDevice\\n$`));
  });

  it('a newline in a native message cannot forge a line: control characters become spaces', () => {
    const out = path.join(tmp, 'forged.out');
    const env = injectedEnv({ [INJECT_ENV.profile]: 'mcs1;x\n1 patched Forged=1' });
    spawnSync('/bin/sh', ['-c', piped(statusVariables(), out), consumer], { env });
    expect(readFileSync(out, 'utf8')).toMatch(/^\d+ error ERR_INVALID_PROFILE unknown field 'x 1 patched Forged'\n$/);
  });

  it(`exec reads at most ${STATUS_LIMIT_BYTES} bytes of the status pipe, drains the rest, and says so`, async () => {
    const r = await runWithInjector({ profile, command: writer, args: [String(4 * 1024 * 1024)] }, injector, []);
    expect([r.exitCode, r.processes, r.injectorErrors]).toEqual([
      0,
      [],
      [`ERR_STATUS_OVERFLOW the status pipe carried more than ${STATUS_LIMIT_BYTES} bytes; the rest was ignored`],
    ]);
  });

  it('the collector keeps whole lines up to the limit, and both sides of it', () => {
    // Exactly the limit, in two chunks: all of it, not overflowed.
    const at = statusCollector(10);
    at.add(Buffer.from('1 a\n'));
    at.add(Buffer.from('2 bbb\n'));
    expect([at.text(), at.overflowed()]).toEqual(['1 a\n2 bbb\n', false]);
    // One byte more, in a chunk of its own: overflowed; what was kept is whole lines.
    at.add(Buffer.from('3'));
    expect([at.text(), at.overflowed()]).toEqual(['1 a\n2 bbb\n', true]);
    // A chunk that crosses the limit after an earlier one: cut at the limit, then back to the last whole line.
    const across = statusCollector(10);
    across.add(Buffer.from('1 a\n'));
    across.add(Buffer.from('2 bb\n3 cc\n'));
    expect([across.text(), across.overflowed()]).toEqual(['1 a\n2 bb\n', true]);
    // Below the limit, a last line without its newline is kept as it came.
    const below = statusCollector(10);
    below.add(Buffer.from('1 a\n2 b'));
    expect([below.text(), below.overflowed()]).toEqual(['1 a\n2 b', false]);
  });
});

/**
 * The status variables for a command that sh starts, naming sh as the parent. They go on the command itself: sh
 * loads the injector too, and unsets what it is not given as its own.
 */
function statusVariables(): string {
  return `${INJECT_ENV.statusFd}=3 ${INJECT_ENV.statusPid}=$$`;
}

/** A script in which sh's child becomes the consumer ("$0") with fd 3 on a pipe to `out`. */
function piped(variables: string, out: string): string {
  // The left side of a pipeline is a subshell; `exec` makes the consumer that subshell, a child of sh ($$).
  return `{ ${variables} exec "$0" 3>&1 > /dev/null; } | cat > '${out}'`;
}

/** This process's environment with the injector preloaded and the given status variables (none inherited). */
function injectedEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    LD_PRELOAD: injector,
    [INJECT_ENV.profile]: encodeNativeProfile(profile, false),
  };
  for (const key of [INJECT_ENV.statusFd, INJECT_ENV.statusPid, INJECT_ENV.statusId, INJECT_ENV.traceFolder])
    delete env[key];
  return { ...env, ...extra };
}
