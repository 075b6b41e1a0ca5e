/**
 * Signals sent to exec and the program: which to pass on so the program gets each exactly once (process groups, from
 * the addon, /proc or ps), and the exit status of a program a signal killed.
 */
import { spawnSync } from 'node:child_process';
import { SYSTEM_TOOLS } from './system-tools.js';
import { readFileSync } from 'node:fs';
import { constants as osConstants } from 'node:os';

/**
 * The exit status a shell reports for a program killed by `signal`: 128 + its number. The CLI returns it when it
 * outlives re-raising the signal on itself (Node ignores a few, such as SIGPIPE).
 */
export function signalExitStatus(signal: NodeJS.Signals): number {
  return 128 + (osConstants.signals[signal] ?? 0);
}

/** The signals exec passes on to the program (shouldForwardSignal decides each time). */
export const FORWARDED_SIGNALS: readonly NodeJS.Signals[] = [
  'SIGINT',
  'SIGTERM',
  'SIGHUP',
  'SIGQUIT',
  'SIGUSR1',
  'SIGUSR2',
];

/** Signals a terminal generates from a key (Ctrl-C, Ctrl-\) and sends to its whole foreground process group. */
const TERMINAL_KEY_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGQUIT'];

/** Process-group ids as `processGroups()` reports them; -1 where there is none. */
export interface ProcessGroupIds {
  own: number;
  terminal: number;
  child: number;
}

/**
 * Whether a signal this process received must be passed on to the child, so that the child gets it exactly once.
 *
 * The child runs in our process group (it shares our terminal and job control). A terminal sends Ctrl-C (SIGINT) and
 * Ctrl-\ (SIGQUIT) to its whole foreground process group, so when that group is ours and the child is still in it,
 * the child already has the signal, and passing it on would deliver it twice: llama-server takes a second SIGINT as
 * "exit now", skipping its graceful shutdown, and a program that then `_exit`s loses its --trace file. Everything else
 * is passed on: a signal a terminal never sends (SIGTERM, SIGUSR1/2, SIGHUP from a supervisor), and SIGINT/SIGQUIT
 * whenever the terminal cannot have sent them to the child (we have no controlling terminal, our group is not its
 * foreground group, or the child moved to a group of its own), which is how a supervisor's `kill -INT <our pid>`
 * arrives. The one case this cannot tell apart is a `kill -INT` aimed at our pid while we are the terminal's
 * foreground job: siginfo would not help portably (macOS's kernel fills si_pid and si_code alike for kill(2) and for
 * the terminal), so it is taken for a keypress and not passed on. `kill -TERM` reaches the child in every case.
 * Without process-group facts (`groups` null) every signal is passed on. On Windows SIGINT is never passed on: a
 * console's Ctrl-C reaches every process attached to the console, and `child.kill('SIGINT')` there would not deliver
 * a Ctrl-C but terminate the child outright.
 */
export function shouldForwardSignal(
  signal: NodeJS.Signals,
  groups: ProcessGroupIds | null,
  platform: NodeJS.Platform = process.platform,
): boolean {
  if (platform === 'win32' && signal === 'SIGINT') return false;
  if (!TERMINAL_KEY_SIGNALS.includes(signal) || groups === null) return true;
  const terminalSignalledChild = groups.terminal > 0 && groups.terminal === groups.own && groups.child === groups.own;
  return !terminalSignalledChild;
}

/** The process group (field 5) and the terminal's foreground group (field 8) of a /proc/<pid>/stat line. */
export interface ProcStatGroups {
  pgrp: number;
  tpgid: number;
}

/**
 * Reads a Linux /proc/<pid>/stat line: `pid (comm) state ppid pgrp session tty_nr tpgid …`. The command name may hold
 * spaces and parentheses of its own (a program named `a) (b`), so the fields are counted after the last ')'. Null
 * when the line is not of that shape.
 */
export function parseProcStat(line: string): ProcStatGroups | null {
  const close = line.lastIndexOf(')');
  if (close < 0) return null;
  const fields = line
    .slice(close + 1)
    .trim()
    .split(/\s+/);
  // After the name: state, ppid, pgrp, session, tty_nr, tpgid.
  const [pgrp, tpgid] = [fields[2], fields[5]].map((f) => (/^-?\d+$/.test(String(f)) ? Number(f) : NaN));
  return Number.isNaN(pgrp) || Number.isNaN(tpgid) ? null : { pgrp: pgrp!, tpgid: tpgid! };
}

/**
 * Reads `ps -o pid=,pgid=,tpgid=` output for our pid and the child's: our group and the terminal's foreground group
 * from our line, the child's group from its line; -1 for a line that is missing (the child has exited). Null when our
 * own line is missing or unreadable.
 */
export function parsePsGroups(output: string, ownPid: number, childPid: number): ProcessGroupIds | null {
  const rows = new Map<number, number[]>();
  for (const line of output.split('\n')) {
    const numbers = line.trim().split(/\s+/).map(Number);
    if (numbers.length === 3 && numbers.every(Number.isInteger)) rows.set(numbers[0]!, numbers);
  }
  const own = rows.get(ownPid);
  if (own === undefined) return null;
  return { own: own[1]!, terminal: own[2]!, child: rows.get(childPid)?.[1] ?? -1 };
}

function readProcStat(pid: number | 'self'): ProcStatGroups | null {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

/**
 * Process-group facts without the native module, asked of the system at signal time: Linux's /proc, or ps(1) on
 * macOS (that path runs only when the addon failed to load there, and no Mac has exercised it). Null where neither
 * is available; Windows has no process groups to ask about.
 */
export function processGroupsWithoutAddon(
  childPid: number,
  platform: NodeJS.Platform = process.platform,
): ProcessGroupIds | null {
  if (platform === 'linux') {
    const own = readProcStat('self');
    if (own === null) return null;
    return { own: own.pgrp, terminal: own.tpgid, child: readProcStat(childPid)?.pgrp ?? -1 };
  }
  if (platform === 'darwin') {
    const ps = spawnSync(
      SYSTEM_TOOLS.ps,
      ['-o', 'pid=,pgid=,tpgid=', '-p', String(process.pid), '-p', String(childPid)],
      {
        encoding: 'utf8',
        timeout: 2_000,
      },
    );
    return ps.error ? null : parsePsGroups(ps.stdout ?? '', process.pid, childPid);
  }
  return null;
}
