// lib/exec/signals.ts: the exit status a signal gives, which signals exec forwards, and the process groups it reads
// without the native module.
import { execFileSync, spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import {
  parseProcStat,
  parsePsGroups,
  processGroupsWithoutAddon,
  shouldForwardSignal,
  signalExitStatus,
} from '../../lib/exec/signals.js';

describe('exit status and signals', () => {
  it('a program killed by a signal: 128 + the signal’s number, as a shell reports it', () => {
    expect(signalExitStatus('SIGHUP')).toBe(129);
    expect(signalExitStatus('SIGINT')).toBe(130);
    expect(signalExitStatus('SIGKILL')).toBe(137);
    expect(signalExitStatus('SIGPIPE')).toBe(141);
    expect(signalExitStatus('SIGTERM')).toBe(143);
  });

  it('SIGINT/SIGQUIT: a terminal group id must be positive to count as the terminal that signalled the child', () => {
    expect(shouldForwardSignal('SIGINT', { own: 1, terminal: 1, child: 1 })).toBe(false);
    expect(shouldForwardSignal('SIGQUIT', { own: 1, terminal: 1, child: 1 })).toBe(false);
    expect(shouldForwardSignal('SIGINT', { own: 0, terminal: 0, child: 0 })).toBe(true);
    // No terminal, no group of ours, no group of the child's: nothing says the terminal sent it.
    expect(shouldForwardSignal('SIGINT', { own: -1, terminal: -1, child: -1 })).toBe(true);
    expect(shouldForwardSignal('SIGQUIT', { own: -1, terminal: -1, child: -1 })).toBe(true);
  });

  it('the child in our group but the terminal’s group another: passed on; our group the terminal’s but the child elsewhere: passed on', () => {
    expect(shouldForwardSignal('SIGQUIT', { own: 50, terminal: 60, child: 50 })).toBe(true);
    expect(shouldForwardSignal('SIGQUIT', { own: 50, terminal: 50, child: 70 })).toBe(true);
    expect(shouldForwardSignal('SIGTERM', { own: 50, terminal: 50, child: 50 })).toBe(true);
    expect(shouldForwardSignal('SIGUSR2', { own: 50, terminal: 50, child: 50 })).toBe(true);
  });
});

describe('process groups without the native module', () => {
  it('a /proc stat line: the group (field 5) and the terminal’s group (field 8), counted after the last )', () => {
    expect(parseProcStat('4242 (node) S 4200 4242 4100 34816 4242 4194560 0 0')).toEqual({ pgrp: 4242, tpgid: 4242 });
    // A command name holding spaces and ") (" must not shift the fields.
    expect(parseProcStat('77 (a) (b c) R 1 70 70 0 -1 4194560 12')).toEqual({ pgrp: 70, tpgid: -1 });
    expect(parseProcStat('77 (x) 1 2 3) S 1 71 70 34817 72 0')).toEqual({ pgrp: 71, tpgid: 72 });
  });

  it('a line that is not a stat line: null', () => {
    expect(parseProcStat('')).toBeNull();
    expect(parseProcStat('77 node S 1 70 70 0 -1')).toBeNull();
    expect(parseProcStat('77 (node) S 1 70 70 0')).toBeNull();
    expect(parseProcStat('77 (node) S 1 seventy 70 0 -1')).toBeNull();
    expect(parseProcStat('77 (node) S 1 x70 70 0 -1')).toBeNull();
    expect(parseProcStat('77 (node) S 1 70 70 0 -1x')).toBeNull();
    // Numbers in the right places, but no name: not a stat line.
    expect(parseProcStat('1 2 3 4 5 6 7 8')).toBeNull();
  });

  it('fields are counted after the name however they are spaced, and a name may be all there is before them', () => {
    expect(parseProcStat('77 (node)  S\t1   70 70 0  72')).toEqual({ pgrp: 70, tpgid: 72 });
    expect(parseProcStat(') S 1 70 70 0 72')).toEqual({ pgrp: 70, tpgid: 72 });
  });

  it('ps output: our group and the terminal’s from our line, the child’s group from its line, -1 when it is gone', () => {
    expect(parsePsGroups('  100   100   100\n  101   100   100\n', 100, 101)).toEqual({
      own: 100,
      terminal: 100,
      child: 100,
    });
    expect(parsePsGroups('101 300 0\n100 100 0\n', 100, 101)).toEqual({ own: 100, terminal: 0, child: 300 });
    expect(parsePsGroups('100 100 -1\n', 100, 101)).toEqual({ own: 100, terminal: -1, child: -1 });
    expect(parsePsGroups('101 100 100\n', 100, 101)).toBeNull();
    expect(parsePsGroups('', 100, 101)).toBeNull();
    expect(parsePsGroups('100 100\n', 100, 101)).toBeNull();
    expect(parsePsGroups('100 100 ?\n101 100 100\n', 100, 101)).toBeNull();
  });

  /** Our group and our terminal's foreground group as ps(1) sees them. */
  function psSays(pid: number): number[] {
    return execFileSync('ps', ['-o', 'pgid=,tpgid=', '-p', String(pid)], { encoding: 'utf8' })
      .trim()
      .split(/\s+/)
      .map(Number);
  }

  it('Linux, from /proc: the same groups ps reports; a child in our group, a detached one in its own, a gone one -1', async () => {
    const [ownGroup, terminal] = psSays(process.pid);
    const inOurs = spawn('sleep', ['5'], { stdio: 'ignore' });
    const detached = spawn('sleep', ['5'], { stdio: 'ignore', detached: true });
    try {
      expect(processGroupsWithoutAddon(inOurs.pid!, 'linux')).toEqual({ own: ownGroup, terminal, child: ownGroup });
      expect(processGroupsWithoutAddon(detached.pid!, 'linux')).toEqual({
        own: ownGroup,
        terminal,
        child: detached.pid,
      });
      expect(processGroupsWithoutAddon(0x7fffffff, 'linux')).toEqual({ own: ownGroup, terminal, child: -1 });
      // The macOS path asks ps(1); Linux's ps takes the same options, so it runs here too (a Mac's ps has not).
      expect(processGroupsWithoutAddon(inOurs.pid!, 'darwin')).toEqual({ own: ownGroup, terminal, child: ownGroup });
      expect(processGroupsWithoutAddon(detached.pid!, 'darwin')).toEqual({
        own: ownGroup,
        terminal,
        child: detached.pid,
      });
      expect(processGroupsWithoutAddon(0x7fffffff, 'darwin')).toEqual({ own: ownGroup, terminal, child: -1 });
    } finally {
      inOurs.kill();
      detached.kill();
    }
  });

  it('Windows (no process groups) and a system with neither /proc nor a known ps: no facts', () => {
    expect(processGroupsWithoutAddon(process.pid, 'win32')).toBeNull();
    expect(processGroupsWithoutAddon(process.pid, 'freebsd')).toBeNull();
  });
});
