// exec killed with SIGKILL: on Linux the program it started dies with it (the injector asks for a parent-death signal
// when its parent is the pid METAL_CAP_SHIM_EXEC_PID names), and nothing else does. The CLI runs as a child of this
// test, over the simulated Metal; programs report their pids on stdout, and /proc says whether each still runs.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { INJECT_ENV, injectorCandidates } from '../../lib/exec/injector.js';
import { cli, describeSim, requireSimBuild, root } from '../support/helpers.js';

const VM = { METAL_CAP_SHIM_SIM_SNAPSHOT: 'vz-guest-m1-ultra-tahoe-stock' };
/** How long a program may take to go once its parent is killed; the kernel signals it at once. */
const GONE_WITHIN_MS = 5_000;
/** How long a program that must live on is watched after its parent is killed. */
const LIVES_ON_MS = 1_000;

/** A static program (LD_PRELOAD does not reach it) that starts argv[1…] as its child, prints the child's pid, waits. */
const FORKER_C = `#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
  (void)argc;
  pid_t pid = fork();
  if (pid == 0) {
    execv(argv[1], argv + 1);
    _exit(127);
  }
  printf("%d\\n", (int)pid);
  fflush(stdout);
  waitpid(pid, NULL, 0);
  return 0;
}
`;
/** A static program that execs argv[1…] in place: a launcher that picks the real binary. */
const LAUNCHER_C = `#include <unistd.h>
int main(int argc, char **argv) {
  (void)argc;
  execv(argv[1], argv + 1);
  return 127;
}
`;

/** Prints its own pid, then becomes a long sleep in place (the parent-death signal outlives an exec in place). */
const SELF_THEN_SLEEP = ['-c', 'echo $$; exec sleep 60'];

let tmp: string;
let forker: string;
let launcher: string;
const started: ChildProcess[] = [];
const pids: number[] = [];

/** Field 3 (state) and field 4 (ppid) of /proc/<pid>/stat, or null when there is no such process. */
function stat(pid: number): { state: string; ppid: number } | null {
  try {
    const line = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const [state, ppid] = line
      .slice(line.lastIndexOf(')') + 2)
      .split(' ')
      .slice(0, 2);
    return { state: state!, ppid: Number(ppid) };
  } catch {
    return null;
  }
}

/** Running: there, and not a zombie (a killed orphan may wait to be reaped by an init that never reaps). */
const running = (pid: number): boolean => {
  const s = stat(pid);
  return s !== null && s.state !== 'Z';
};

/** The variable names of /proc/<pid>/environ: the environment the process was started with. */
function startEnvironment(pid: number): string[] {
  return readFileSync(`/proc/${pid}/environ`, 'utf8')
    .split('\0')
    .filter((e) => e !== '')
    .map((e) => e.slice(0, e.indexOf('=')));
}

/** Starts `command` with `args`, stdout piped; resolves with it and the pids it printed, one a line, once `count` came. */
function startReporting(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  count = 1,
): Promise<{ child: ChildProcess; printed: number[] }> {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  started.push(child);
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${count} pid(s) within 20 s: ${out} ${err}`)), 20_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const lines = out.split('\n').slice(0, -1);
      if (lines.length < count) return;
      clearTimeout(timer);
      const printed = lines.slice(0, count).map(Number);
      pids.push(...printed);
      resolve({ child, printed });
    });
    child.on('exit', (code, signal) => reject(new Error(`exited ${code ?? signal} before ${count} pid(s): ${err}`)));
  });
}

/** exec with the program and its arguments; resolves once the program printed `count` pids. */
function startExec(argv: string[], env: NodeJS.ProcessEnv = VM, count = 1) {
  return startReporting(process.execPath, [cli, 'exec', '--', ...argv], { NO_COLOR: '1', ...env }, count);
}

/** SIGKILLs `parent` and waits for it to be reaped (so its children have been reparented). */
async function killHard(parent: ChildProcess): Promise<void> {
  const exited = new Promise((done) => parent.once('exit', done));
  parent.kill('SIGKILL');
  await exited;
}

/** Whether `pid` runs the program named `comm` (it has exec'd it) within `bound` ms, polled every 10 ms. */
async function execdWithin(pid: number, comm: string, bound: number): Promise<boolean> {
  const start = Date.now();
  while (Date.now() - start <= bound) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === comm) return true;
    } catch {
      return false;
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  return false;
}

/** Milliseconds until `pid` no longer runs, polled every 10 ms; null when it still runs after `bound`. */
async function goneWithin(pid: number, bound: number): Promise<number | null> {
  const start = Date.now();
  while (Date.now() - start <= bound) {
    if (!running(pid)) return Date.now() - start;
    await new Promise((r) => setTimeout(r, 10));
  }
  return null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describeSim('exec killed with SIGKILL (Linux: the parent-death signal the injector asks for)', () => {
  beforeAll(() => {
    requireSimBuild();
    tmp = realpathSync(mkdtempSync(path.join(tmpdir(), 'mcs-exec-orphan-')));
    for (const [name, source] of [
      ['forker', FORKER_C],
      ['launcher', LAUNCHER_C],
    ] as const) {
      writeFileSync(path.join(tmp, `${name}.c`), source);
      execFileSync('clang-14', ['-static', path.join(tmp, `${name}.c`), '-o', path.join(tmp, name)]);
    }
    forker = path.join(tmp, 'forker');
    launcher = path.join(tmp, 'launcher');
  });
  afterEach(() => {
    for (const pid of pids.splice(0)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    for (const child of started.splice(0)) child.kill('SIGKILL');
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('the patched program goes with exec, also after it exec’d another program in place', async () => {
    const { child: exec, printed } = await startExec(['sh', ...SELF_THEN_SLEEP]);
    const [program] = printed as [number];
    expect([running(program), stat(program)?.ppid]).toEqual([true, exec.pid]);
    await killHard(exec);
    const gone = await goneWithin(program, GONE_WITHIN_MS);
    expect(gone).not.toBeNull();
    expect(gone!).toBeGreaterThanOrEqual(0);
    expect(gone!).toBeLessThanOrEqual(GONE_WITHIN_MS);
  });

  it('a static launcher exec’s the real program in place: the injector loads there, its parent is exec, it goes too', async () => {
    const { child: exec, printed } = await startExec([launcher, '/bin/sh', ...SELF_THEN_SLEEP]);
    const [program] = printed as [number];
    expect(stat(program)?.ppid).toBe(exec.pid);
    await killHard(exec);
    expect(await goneWithin(program, GONE_WITHIN_MS)).not.toBeNull();
  });

  it('the program’s own children are not its parent’s business: they run on, and never see the variable', async () => {
    // sh (injected, exec's child) starts a sleep of its own and prints its pid, then waits.
    const { child: exec, printed } = await startExec(['sh', '-c', 'sleep 60 & echo $$; echo $!; wait'], VM, 2);
    const [program, own] = printed as [number, number];
    expect(stat(own)?.ppid).toBe(program);
    // $! is printed once sh forked: until the child has exec'd sleep, /proc/PID/environ still shows sh's first block.
    expect(await execdWithin(own, 'sleep', GONE_WITHIN_MS)).toBe(true);
    // The program unset it before it started anything.
    expect(startEnvironment(program)).toContain(INJECT_ENV.execPid);
    expect(startEnvironment(own)).not.toContain(INJECT_ENV.execPid);
    expect(startEnvironment(own)).toContain('LD_PRELOAD');
    await killHard(exec);
    expect(await goneWithin(program, GONE_WITHIN_MS)).not.toBeNull();
    // A fork child has no parent-death signal: the sleep is orphaned by its own parent's death, not killed.
    await sleep(LIVES_ON_MS);
    expect(running(own)).toBe(true);
  });

  it('a stale variable (a static program between exec and an injected one) kills nobody: its parent is not exec', async () => {
    // The static forker keeps the variable; the sleep it starts loads the injector, sees a parent that is not exec.
    const { child: exec, printed } = await startExec([forker, '/bin/sleep', '60']);
    const [grandchild] = printed as [number];
    // The forker prints the pid once it forked: wait until the child has exec'd sleep (before that, and while execve
    // replaces its memory, /proc/PID/environ may read empty).
    expect(await execdWithin(grandchild, 'sleep', GONE_WITHIN_MS)).toBe(true);
    const forkerPid = stat(grandchild)!.ppid;
    expect(stat(forkerPid)?.ppid).toBe(exec.pid);
    expect(startEnvironment(grandchild)).toContain(INJECT_ENV.execPid);
    await sleep(LIVES_ON_MS);
    expect(running(grandchild)).toBe(true);
    // Neither the forker (no injector) nor its child (its parent is not exec) asked for the signal: both run on.
    await killHard(exec);
    await sleep(LIVES_ON_MS);
    expect([running(forkerPid), running(grandchild)]).toEqual([true, true]);
    pids.push(forkerPid);
  });

  it('unpatched (profile off: no injector), the program runs on, orphaned', async () => {
    const { child: exec, printed } = await startExec(['sh', ...SELF_THEN_SLEEP], {
      ...VM,
      METAL_CAP_SHIM_PROFILE: 'off',
    });
    const [program] = printed as [number];
    expect(stat(program)?.ppid).toBe(exec.pid);
    await killHard(exec);
    await sleep(LIVES_ON_MS);
    expect(running(program)).toBe(true);
  });

  it('the injector alone: the same program under the same parent dies with it only when the variable names the parent', async () => {
    // A Node parent that starts the program with the injector preloaded, the variable naming itself or left out.
    const parentOf = (named: boolean) =>
      startReporting(
        process.execPath,
        [
          '-e',
          `const env = { ...process.env, LD_PRELOAD: ${JSON.stringify(injectorCandidates(root, 'linux', VM)[0])} };
           if (${named}) env.${INJECT_ENV.execPid} = String(process.pid);
           require('node:child_process').spawn('sh', ${JSON.stringify(SELF_THEN_SLEEP)}, { stdio: 'inherit', env });
           setInterval(() => {}, 1000);`,
        ],
        VM,
      );
    const named = await parentOf(true);
    const unnamed = await parentOf(false);
    await Promise.all([killHard(named.child), killHard(unnamed.child)]);
    expect(await goneWithin(named.printed[0]!, GONE_WITHIN_MS)).not.toBeNull();
    await sleep(LIVES_ON_MS);
    expect(running(unnamed.printed[0]!)).toBe(true);
  });
});
