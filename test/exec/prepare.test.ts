// exec's planning, in-process: what runs, with which environment, or why not. The simulated Metal answers from the
// bare-metal M1 Ultra snapshot, so the bare-metal guard has something to refuse, and from no snapshot at all, so there
// is nothing to guard (useSimulation, per describe block). The spawn suite (test/e2e/exec.test.ts) keeps the CLI's
// end-to-end behaviour.
import { execFileSync, spawn } from 'node:child_process';
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  NativeError,
  RefusedError,
  SpawnError,
  TraceFileError,
  UnsupportedPlatformError,
} from '../../lib/core/errors.js';
import {
  hardenedRuntimeBlocker,
  INJECTION_ENTITLEMENTS,
  injectionBlocker,
  setIdBlocker,
} from '../../lib/exec/codesign.js';
import { resolveCommand } from '../../lib/exec/command.js';
import {
  childEnvironment,
  INJECT_ENV,
  injectorCandidates,
  injectorPath,
  missingInjectorReason,
  parseInjectorStatus,
  preloadVariable,
} from '../../lib/exec/injector.js';
import { prepareExec, unguardedInjection } from '../../lib/exec/prepare.js';
import {
  parseProcStat,
  parsePsGroups,
  processGroupsWithoutAddon,
  shouldForwardSignal,
  signalExitStatus,
} from '../../lib/exec/signals.js';
import { sharedFolderProblem } from '../../lib/core/safefs.js';
import { checkTraceFile, writeTrace } from '../../lib/exec/trace.js';
import { encodeNativeProfile, resolveProfile } from '../../lib/patch/profiles.js';
import { CUA_RELEASE_ON_M1_ULTRA } from '../support/apply-helpers.js';
import { installFakeCodesign, signedProgram } from '../support/codesign-fake.js';
import { describeSim, requireSimBuild, root, thrown } from '../support/helpers.js';
import { useSimulation } from '../support/simulation.js';
import { SYSTEM_TOOLS } from '../../lib/exec/system-tools.js';

/** The codesign the signature checks ask: the system's, or a suite's fake. */
let fakeCodesign: string = SYSTEM_TOOLS.codesign;

const [ALLOW_DYLD, DISABLE_LV] = INJECTION_ENTITLEMENTS;
const SIM = 'METAL_CAP_SHIM_SIM_SNAPSHOT';
const SO = path.join(root, 'build', 'Release', 'libmetal_cap_shim_inject.so');

/** What applying cua-release to the bare-metal M1 Ultra warns about. */
const WARNINGS_FORCED = CUA_RELEASE_ON_M1_ULTRA;

let tmp: string;
beforeAll(() => {
  tmp = realpathSync(mkdtempSync(path.join(tmpdir(), 'mcs-exec-plan-')));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A fresh folder under this suite's temporary one. */
let folders = 0;
function folder(): string {
  const dir = path.join(tmp, `f${folders++}`);
  mkdirSync(dir);
  return dir;
}

function file(dir: string, name: string, mode: number, content = '#!/bin/sh\nexit 0\n'): string {
  const f = path.join(dir, name);
  writeFileSync(f, content);
  chmodSync(f, mode);
  return f;
}

describe('where the injector is looked for', () => {
  const local = (ext: string) => path.join('/pkg', 'build', 'Release', `libmetal_cap_shim_inject.${ext}`);
  const prebuilt = path.join('/pkg', 'prebuilds', 'darwin-x64+arm64', 'libmetal_cap_shim_inject.dylib');

  it('on macOS: the local build first, then the prebuilt one', () => {
    expect(injectorCandidates('/pkg', 'darwin', {})).toEqual([local('dylib'), prebuilt]);
  });

  it('on macOS with PREBUILDS_ONLY: the shipped binary only', () => {
    expect(injectorCandidates('/pkg', 'darwin', { PREBUILDS_ONLY: '1' })).toEqual([prebuilt]);
  });

  it('outside macOS: the simulated build’s, only when a simulated snapshot is selected (even the empty one)', () => {
    expect(injectorCandidates('/pkg', 'linux', { [SIM]: 'm1-ultra-bare-metal' })).toEqual([local('so')]);
    expect(injectorCandidates('/pkg', 'linux', { [SIM]: '' })).toEqual([local('so')]);
    expect(injectorCandidates('/pkg', 'linux', {})).toEqual([]);
    // PREBUILDS_ONLY means nothing where there are no prebuilds.
    expect(injectorCandidates('/pkg', 'linux', { PREBUILDS_ONLY: '1' })).toEqual([]);
  });

  it('why there is none, per platform', () => {
    expect(missingInjectorReason('darwin')).toBe(
      'the injector library is missing from this install (prebuilds/darwin-x64+arm64); reinstall metal-cap-shim',
    );
    expect(missingInjectorReason('linux')).toBe(
      'exec injects into programs that use Metal, which exists only on macOS; this is linux',
    );
  });
});

describeSim('the injector of this checkout (simulated build)', () => {
  useSimulation('m1-ultra-bare-metal');
  beforeAll(() => requireSimBuild());

  it('is the local build while a simulated snapshot is selected, and none without', () => {
    expect(injectorPath()).toBe(SO);
    const saved = process.env[SIM];
    delete process.env[SIM];
    try {
      expect(injectorPath()).toBeNull();
    } finally {
      process.env[SIM] = saved;
    }
  });
});

describe('resolveCommand (as execvp finds a program)', () => {
  let a: string;
  let b: string;
  beforeAll(() => {
    a = folder();
    b = folder();
    file(a, 'tool', 0o644);
    file(b, 'tool', 0o755);
    file(a, 'both', 0o755);
    file(b, 'both', 0o755);
  });

  it('takes the first executable match on PATH, skipping files that are not executable', () => {
    expect(resolveCommand('tool', { PATH: `${a}${path.delimiter}${b}` })).toBe(path.join(b, 'tool'));
    expect(resolveCommand('both', { PATH: `${a}${path.delimiter}${b}` })).toBe(path.join(a, 'both'));
    expect(resolveCommand('both', { PATH: `${b}${path.delimiter}${a}` })).toBe(path.join(b, 'both'));
  });

  it('finds nothing when no folder has it, or there is no PATH', () => {
    expect(resolveCommand('tool', { PATH: a })).toBeNull();
    expect(resolveCommand('no-such-tool', { PATH: `${a}${path.delimiter}${b}` })).toBeNull();
    expect(resolveCommand('tool', {})).toBeNull();
  });

  it('an empty PATH entry is skipped: exec never runs a program from the current folder by accident', () => {
    const cwd = process.cwd();
    process.chdir(b);
    try {
      expect(resolveCommand('tool', { PATH: `${path.delimiter}${a}` })).toBeNull();
      expect(resolveCommand('tool', { PATH: `${a}${path.delimiter}${path.delimiter}${b}` })).toBe(path.join(b, 'tool'));
    } finally {
      process.chdir(cwd);
    }
  });

  it('a command with a slash is taken as a path (made absolute), not looked up, and must be executable', () => {
    const cwd = process.cwd();
    process.chdir(tmp);
    try {
      expect(resolveCommand(`./${path.basename(b)}/tool`, { PATH: a })).toBe(path.join(b, 'tool'));
      expect(resolveCommand(`${path.basename(a)}/tool`, { PATH: b })).toBeNull();
      expect(resolveCommand(path.join(a, 'missing'), { PATH: b })).toBeNull();
    } finally {
      process.chdir(cwd);
    }
  });
});

describe('resolveCommand on Windows (its rules, applied to files in a temporary folder here)', () => {
  let a: string;
  let b: string;
  beforeAll(() => {
    a = folder();
    b = folder();
    // No execute bit anywhere: Windows has none, a file is enough.
    file(a, 'tool.CMD', 0o644);
    file(b, 'tool.EXE', 0o644);
    file(b, 'tool', 0o755);
    file(a, 'plain', 0o755);
    file(b, 'both.COM', 0o644);
    file(b, 'both.EXE', 0o644);
  });
  const win = (command: string, env: NodeJS.ProcessEnv) => resolveCommand(command, env, 'win32');

  it('a name without an extension is tried with each PATHEXT extension, in PATHEXT’s order, folder by folder', () => {
    expect(win('tool', { PATH: `${a};${b}`, PATHEXT: '.COM;.EXE;.BAT;.CMD' })).toBe(path.join(a, 'tool.CMD'));
    expect(win('tool', { PATH: `${b};${a}`, PATHEXT: '.COM;.EXE;.BAT;.CMD' })).toBe(path.join(b, 'tool.EXE'));
    expect(win('both', { PATH: b, PATHEXT: '.COM;.EXE' })).toBe(path.join(b, 'both.COM'));
    expect(win('both', { PATH: b, PATHEXT: '.EXE;.COM' })).toBe(path.join(b, 'both.EXE'));
    // The same folders under POSIX rules: no extension is added, ';' is no delimiter, and Path is not PATH.
    expect(resolveCommand('tool', { PATH: `${a}:${b}` }, 'linux')).toBe(path.join(b, 'tool'));
    expect(resolveCommand('tool', { PATH: `${a};${b}` }, 'linux')).toBeNull();
    expect(resolveCommand('tool', { Path: b }, 'linux')).toBeNull();
  });

  it('a name that has one of PATHEXT’s extensions (in any case) is taken as it is; a file without one is no program', () => {
    expect(win('tool.EXE', { PATH: `${a};${b}`, PATHEXT: '.EXE;.CMD' })).toBe(path.join(b, 'tool.EXE'));
    expect(win('tool.CMD', { PATH: `${b};${a}`, PATHEXT: '.exe;.cmd' })).toBe(path.join(a, 'tool.CMD'));
    expect(win('plain', { PATH: `${a};${b}`, PATHEXT: '.EXE;.CMD' })).toBeNull();
  });

  it('PATH and PATHEXT are found whatever their case (Windows spells it Path); without PATHEXT, .COM;.EXE;.BAT;.CMD', () => {
    expect(win('tool', { Path: b, PathExt: '.EXE' })).toBe(path.join(b, 'tool.EXE'));
    expect(win('tool', { Path: a })).toBe(path.join(a, 'tool.CMD'));
    expect(win('tool', { PATHEXT: '.EXE' })).toBeNull();
  });

  it('empty entries of PATH and PATHEXT are skipped: the current folder is never searched', () => {
    const cwd = process.cwd();
    process.chdir(b);
    try {
      expect(win('tool', { PATH: `;${a}`, PATHEXT: '.EXE;;' })).toBeNull();
      expect(win('tool', { PATH: `${a};;${b}`, PATHEXT: ';.EXE' })).toBe(path.join(b, 'tool.EXE'));
    } finally {
      process.chdir(cwd);
    }
  });

  it('a backslash or a slash makes a path (made absolute, PATHEXT tried), not a name to look up', () => {
    const cwd = process.cwd();
    process.chdir(tmp);
    try {
      expect(win(`${path.basename(b)}/tool`, { PATH: a, PATHEXT: '.EXE' })).toBe(path.join(b, 'tool.EXE'));
      expect(win(`./${path.basename(a)}/tool`, { PATH: b, PATHEXT: '.EXE' })).toBeNull();
      // On this file system a backslash is part of a name: a file called `sub\tool.EXE` stands for that path.
      file(tmp, 'sub\\tool.EXE', 0o644);
      expect(win('sub\\tool', { PATH: b, PATHEXT: '.EXE' })).toBe(path.join(tmp, 'sub\\tool.EXE'));
      expect(resolveCommand('sub\\tool.EXE', { PATH: b }, 'linux')).toBeNull();
    } finally {
      process.chdir(cwd);
    }
  });
});

describe('checkTraceFile (--trace)', () => {
  it('a new file, or an existing regular file, in a folder that exists: the absolute path, its folder resolved', () => {
    const dir = realpathSync(folder());
    const { dev, ino } = statSync(dir);
    expect(checkTraceFile(path.join(dir, 'new.json'))).toEqual({
      file: path.join(dir, 'new.json'),
      folder: dir,
      dev,
      ino,
    });
    const old = file(dir, 'old.json', 0o644, 'stale');
    expect(checkTraceFile(old).file).toBe(old);
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      expect(checkTraceFile('rel.json').file).toBe(path.join(dir, 'rel.json'));
    } finally {
      process.chdir(cwd);
    }
    // A link in the path is followed once, here: the target names the real folder.
    const link = path.join(folder(), 'link');
    symlinkSync(dir, link);
    expect(checkTraceFile(path.join(link, 'via.json'))).toEqual({
      file: path.join(dir, 'via.json'),
      folder: dir,
      dev,
      ino,
    });
  });

  it('a folder other users may write is refused, unless it is sticky and ours or root’s (as /tmp is)', () => {
    const open = realpathSync(folder());
    chmodSync(open, 0o777);
    expect(thrown(() => checkTraceFile(path.join(open, 'trace.json')))).toEqual(
      new TraceFileError(
        `--trace ${path.join(open, 'trace.json')}: the folder ${open} can be written by other users (mode 0777) and is not a sticky folder of yours or root's, so another user could swap its entries for links`,
      ),
    );
    chmodSync(open, 0o1777);
    expect(checkTraceFile(path.join(open, 'trace.json')).folder).toBe(open);
    expect(sharedFolderProblem({ mode: 0o41777, uid: 12345 } as never, 0)).toMatch(/^can be written by other users/);
    expect(sharedFolderProblem({ mode: 0o41777, uid: 0 } as never, 12345)).toBe(null);
    expect(sharedFolderProblem({ mode: 0o40775, uid: 12345 } as never, 12345)).toMatch(/mode 0775/);
    expect(sharedFolderProblem({ mode: 0o40755, uid: 0 } as never, 12345)).toBe(null);
  });

  it('a folder swapped for a link, or for another folder, after the check: nothing is written there', () => {
    const base = realpathSync(folder());
    const shared = path.join(base, 'shared');
    const elsewhere = path.join(base, 'elsewhere');
    mkdirSync(shared);
    mkdirSync(elsewhere);
    const target = checkTraceFile(path.join(shared, 'trace.json'));
    renameSync(shared, path.join(base, 'old'));
    symlinkSync(elsewhere, shared);
    expect(writeTrace(target, '{}\n')).toEqual([
      `ERR_TRACE_FILE cannot write ${target.file}: its folder ${shared} now resolves elsewhere (a link was swapped in), so nothing is written there`,
    ]);
    rmSync(shared);
    mkdirSync(shared);
    expect(writeTrace(target, '{}\n')).toEqual([
      `ERR_TRACE_FILE cannot write ${target.file}: its folder ${shared} is not the folder checked before, so nothing is written there`,
    ]);
    expect([readdirSync(elsewhere), readdirSync(shared)]).toEqual([[], []]);
    // The folder it was: written.
    rmSync(shared, { recursive: true });
    renameSync(path.join(base, 'old'), shared);
    expect(writeTrace(target, '{}\n')).toEqual([]);
    expect(readdirSync(shared)).toEqual(['trace.json']);
  });

  it('a folder that does not exist, or a parent that is a file: ERR_TRACE_FILE naming the folder', () => {
    const dir = folder();
    const missing = path.join(dir, 'nope', 'trace.json');
    expect(thrown(() => checkTraceFile(missing))).toEqual(
      new TraceFileError(`--trace ${missing}: the folder ${path.join(dir, 'nope')} does not exist`),
    );
    const parentFile = file(dir, 'plain', 0o644, 'x');
    expect(thrown(() => checkTraceFile(path.join(parentFile, 'trace.json')))).toEqual(
      new TraceFileError(`--trace ${path.join(parentFile, 'trace.json')}: the folder ${parentFile} does not exist`),
    );
  });

  it('something that exists and is not a regular file: ERR_TRACE_FILE', () => {
    const dir = folder();
    expect(thrown(() => checkTraceFile(dir))).toEqual(new TraceFileError(`--trace ${dir}: ${dir} is a folder`));
    const fifo = path.join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    expect(thrown(() => checkTraceFile(fifo))).toEqual(
      new TraceFileError(`--trace ${fifo}: ${fifo} exists and is not a regular file`),
    );
  });
});

describe('the child’s environment', () => {
  const profile = resolveProfile('apple7');
  const INJ = '/pkg/build/Release/libmetal_cap_shim_inject.so';

  it('Linux: LD_PRELOAD is the injector, the profile goes encoded without trace slots, the status fd is 3', () => {
    const env = { PATH: '/usr/bin', HOME: '/home/u' };
    expect(childEnvironment({ profile }, INJ, env, 'linux')).toEqual({
      PATH: '/usr/bin',
      HOME: '/home/u',
      LD_PRELOAD: INJ,
      [INJECT_ENV.profile]: encodeNativeProfile(profile, false),
      [INJECT_ENV.statusFd]: '3',
      [INJECT_ENV.statusPid]: String(process.pid),
      [INJECT_ENV.execPid]: String(process.pid),
    });
  });

  it('a library the caller already preloads stays, after the injector', () => {
    expect(childEnvironment({ profile }, INJ, { LD_PRELOAD: '/opt/libfoo.so' }, 'linux').LD_PRELOAD).toBe(
      `${INJ}:/opt/libfoo.so`,
    );
    // An empty value is no library: no dangling separator.
    expect(childEnvironment({ profile }, INJ, { LD_PRELOAD: '' }, 'linux').LD_PRELOAD).toBe(INJ);
  });

  it('macOS: DYLD_INSERT_LIBRARIES, composed the same way; LD_PRELOAD is left as it was', () => {
    const dylib = '/pkg/prebuilds/darwin-x64+arm64/libmetal_cap_shim_inject.dylib';
    expect(
      childEnvironment(
        { profile },
        dylib,
        { DYLD_INSERT_LIBRARIES: '/usr/local/lib/libx.dylib', LD_PRELOAD: '/l.so' },
        'darwin',
      ),
    ).toEqual({
      DYLD_INSERT_LIBRARIES: `${dylib}:/usr/local/lib/libx.dylib`,
      LD_PRELOAD: '/l.so',
      [INJECT_ENV.profile]: encodeNativeProfile(profile, false),
      [INJECT_ENV.statusFd]: '3',
      [INJECT_ENV.statusPid]: String(process.pid),
      [INJECT_ENV.execPid]: String(process.pid),
    });
    expect(childEnvironment({ profile }, dylib, {}, 'darwin').DYLD_INSERT_LIBRARIES).toBe(dylib);
    expect(preloadVariable('darwin')).toBe('DYLD_INSERT_LIBRARIES');
    expect(preloadVariable('linux')).toBe('LD_PRELOAD');
  });

  it('--trace: exec’s private trace folder, the status fd it was given, and a profile encoded with trace slots', () => {
    expect(
      childEnvironment({ profile, traceFolder: '/tmp/metal-cap-shim-trace-x1', statusFd: 5 }, INJ, {}, 'linux'),
    ).toEqual({
      LD_PRELOAD: INJ,
      [INJECT_ENV.profile]: encodeNativeProfile(profile, true),
      [INJECT_ENV.statusFd]: '5',
      [INJECT_ENV.statusPid]: String(process.pid),
      [INJECT_ENV.traceFolder]: '/tmp/metal-cap-shim-trace-x1',
      [INJECT_ENV.execPid]: String(process.pid),
    });
    // The two encodings differ, so the assertions above tell them apart.
    expect(encodeNativeProfile(profile, true)).not.toBe(encodeNativeProfile(profile, false));
  });

  it('without --trace, a trace path inherited from the caller is dropped, and the caller’s environment is not touched', () => {
    const env = { [INJECT_ENV.traceFolder]: '/tmp/inherited', [INJECT_ENV.statusFd]: '9', LD_PRELOAD: '/opt/a.so' };
    const before = { ...env };
    const child = childEnvironment({ profile }, INJ, env, 'linux');
    expect(child[INJECT_ENV.traceFolder]).toBeUndefined();
    expect(INJECT_ENV.traceFolder in child).toBe(false);
    expect(child[INJECT_ENV.statusFd]).toBe('3');
    expect(env).toEqual(before);
  });

  it('status variables inherited from an injected parent are replaced: this process is the parent, and no identity is asked', () => {
    const env = { [INJECT_ENV.statusFd]: '101', [INJECT_ENV.statusPid]: '0000000001', [INJECT_ENV.statusId]: '5:77' };
    const child = childEnvironment({ profile }, INJ, env, 'linux');
    expect([child[INJECT_ENV.statusFd], child[INJECT_ENV.statusPid], INJECT_ENV.statusId in child]).toEqual([
      '3',
      String(process.pid),
      false,
    ]);
  });

  it('exec’s pid for the parent-death signal on the main thread; from a worker thread none, and an inherited one is dropped', () => {
    const env = { [INJECT_ENV.execPid]: '4242' };
    expect(childEnvironment({ profile }, INJ, env, 'linux', true)[INJECT_ENV.execPid]).toBe(String(process.pid));
    const fromWorker = childEnvironment({ profile }, INJ, env, 'linux', false);
    expect(INJECT_ENV.execPid in fromWorker).toBe(false);
    expect(env).toEqual({ [INJECT_ENV.execPid]: '4242' });
  });
});

describe('what the injector reports over the status fd', () => {
  const NOTHING = { injectorLoaded: false, injectorSlice: null, patchedClasses: [], injectorErrors: [], processes: [] };

  it('nothing: the injector never loaded', () => {
    expect(parseInjectorStatus('')).toEqual(NOTHING);
  });

  it('every line, in the order it came, and each process by its pid; the slice of the first "loaded" line', () => {
    const status = [
      '101 loaded arm64e',
      '101 patched AGXG13XDevice',
      '102 loaded x86_64',
      '102 patched AppleParavirtDevice',
      '102 error ERR_HOOK_FAILED cannot hook MTLDevice',
      '103 patched AGXG13XDevice',
      '101 error ERR_INVALID_PROFILE missing or too long',
      '101 loaded arm64',
    ].join('\n');
    expect(parseInjectorStatus(`${status}\n`)).toEqual({
      injectorLoaded: true,
      injectorSlice: 'arm64e',
      patchedClasses: ['AGXG13XDevice', 'AppleParavirtDevice', 'AGXG13XDevice'],
      injectorErrors: ['ERR_HOOK_FAILED cannot hook MTLDevice', 'ERR_INVALID_PROFILE missing or too long'],
      processes: [
        {
          pid: 101,
          slice: 'arm64e',
          patchedClasses: ['AGXG13XDevice'],
          errors: ['ERR_INVALID_PROFILE missing or too long'],
        },
        {
          pid: 102,
          slice: 'x86_64',
          patchedClasses: ['AppleParavirtDevice'],
          errors: ['ERR_HOOK_FAILED cannot hook MTLDevice'],
        },
        // A fork child that patched without loading the injector again.
        { pid: 103, slice: null, patchedClasses: ['AGXG13XDevice'], errors: [] },
      ],
    });
  });

  it('a last line without its newline still counts; blank lines and other shapes are not lines of the injector', () => {
    const others = [
      '',
      'loaded 1 arm64',
      '1 unloaded arm64',
      '1 patchedX',
      '0 patched Zero',
      '-1 patched Minus',
      '12345678901 patched Long',
      '1  patched Two',
      'x1 error E',
    ];
    expect(parseInjectorStatus(`${others.join('\n')}\n7 patched Foo`)).toEqual({
      ...NOTHING,
      patchedClasses: ['Foo'],
      processes: [{ pid: 7, slice: null, patchedClasses: ['Foo'], errors: [] }],
    });
  });
});

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

describe('SIP: what macOS strips DYLD_INSERT_LIBRARIES from', () => {
  const sh = realpathSync('/bin/sh');

  it('only on macOS: elsewhere nothing is known to block injection', () => {
    expect(injectionBlocker('/bin/sh', 'linux')).toBeNull();
  });

  it('a program in a protected folder, after symlinks are resolved', () => {
    const expected = {
      reason: `${sh} is protected by System Integrity Protection: macOS removes DYLD_INSERT_LIBRARIES from it (and from what it starts), so it would run unpatched. Run the real program directly, not through ${path.basename(sh)}.`,
      launchFails: false,
    };
    expect(injectionBlocker('/bin/sh', 'darwin', fakeCodesign)).toEqual(expected);
    const link = path.join(folder(), 'my-shell');
    symlinkSync('/bin/sh', link);
    expect(injectionBlocker(link, 'darwin', fakeCodesign)).toEqual(expected);
  });

  it('a protected folder’s name further down a path is not that folder', () => {
    const dir = path.join(folder(), 'usr', 'bin');
    mkdirSync(dir, { recursive: true });
    expect(injectionBlocker(file(dir, 'tool', 0o755, 'binary\n'), 'darwin', fakeCodesign)).toBeNull();
  });

  it('a script whose interpreter is protected, as written on the #! line (with or without a space after #!)', () => {
    const dir = folder();
    const script = file(dir, 'serve.sh', 0o755, '#!/bin/sh\nexit 0\n');
    expect(injectionBlocker(script, 'darwin', fakeCodesign)).toEqual({
      reason: `${script} is a script run by /bin/sh, which System Integrity Protection strips of DYLD_INSERT_LIBRARIES, so the programs it starts would run unpatched. Run the real program directly.`,
      launchFails: false,
    });
    const spaced = file(dir, 'serve.py', 0o755, '#! /usr/bin/env   python3 -u\r\nprint(1)\n');
    expect(injectionBlocker(spaced, 'darwin', fakeCodesign)).toEqual({
      reason: `${spaced} is a script run by /usr/bin/env, which System Integrity Protection strips of DYLD_INSERT_LIBRARIES, so the programs it starts would run unpatched. Run the real program directly.`,
      launchFails: false,
    });
  });

  it('a script whose interpreter is a link into a protected folder is judged by where the link leads', () => {
    const dir = folder();
    const link = path.join(dir, 'sh-link');
    symlinkSync('/bin/sh', link);
    const script = file(dir, 'run', 0o755, `#!${link}\n`);
    expect(injectionBlocker(script, 'darwin', fakeCodesign)).toEqual({
      reason: `${script} is a script run by ${link}, which System Integrity Protection strips of DYLD_INSERT_LIBRARIES, so the programs it starts would run unpatched. Run the real program directly.`,
      launchFails: false,
    });
  });

  it('a folder given as the program is no script and stops nothing here (resolveCommand does not take it for a program)', () => {
    const dir = folder();
    expect(resolveCommand(dir)).toBeNull();
    expect(injectionBlocker(dir, 'darwin', fakeCodesign)).toBeNull();
  });

  it('a script run by an unprotected, unsigned interpreter (or one that does not exist), and a file too short for #!: nothing blocks', () => {
    const dir = folder();
    const interpreter = file(dir, 'interp', 0o755, 'binary\n');
    expect(injectionBlocker(file(dir, 'a', 0o755, `#!${interpreter}\n`), 'darwin', fakeCodesign)).toBeNull();
    expect(injectionBlocker(file(dir, 'b', 0o755, '#!/nonexistent/interp\n'), 'darwin', fakeCodesign)).toBeNull();
    expect(injectionBlocker(file(dir, 'c', 0o755, '#'), 'darwin', fakeCodesign)).toBeNull();
  });
});

describe('hardened runtime: the reason names exactly the missing entitlements', () => {
  it('disable-library-validation alone: DYLD_INSERT_LIBRARIES is ignored, and only allow-dyld-environment-variables is missing', () => {
    const xml = `<plist><dict><key>${DISABLE_LV}</key><true/></dict></plist>`;
    expect(hardenedRuntimeBlocker('/opt/x', 'flags=0x10000(runtime)', xml)).toEqual({
      reason: `/opt/x is signed with the hardened runtime without ${ALLOW_DYLD}, so dyld ignores DYLD_INSERT_LIBRARIES for it and it would run unpatched. Use a build without the hardened runtime, or embed metal-cap-shim as a library.`,
      launchFails: false,
    });
  });

  it('the runtime flag is read among others, in hex, in either case', () => {
    const blocked = hardenedRuntimeBlocker('/opt/x', 'flags=0x10000(runtime)', '');
    expect(hardenedRuntimeBlocker('/opt/x', 'CodeDirectory v=20500 flags=0X12002(adhoc,runtime)', '')).toEqual(blocked);
    // Every low bit but restrict (0x800), which blocks for its own reason.
    expect(hardenedRuntimeBlocker('/opt/x', 'flags=0x3f7ff', '')).toEqual(blocked);
    expect(hardenedRuntimeBlocker('/opt/x', 'no signature line', '')).toBeNull();
  });
});

describe('code-signing flags that stop the injector: restrict, library validation, hardened runtime', () => {
  const plist = (keys: string[]) => `<plist><dict>${keys.map((k) => `<key>${k}</key><true/>`).join('')}</dict></plist>`;
  const RESTRICTED = {
    reason:
      '/opt/x is signed with the restrict flag (0x800): dyld removes DYLD_INSERT_LIBRARIES from restricted programs whatever their entitlements, so it would run unpatched. Use a build signed without it, or embed metal-cap-shim as a library.',
    launchFails: false,
  };
  const VALIDATED = {
    reason: `/opt/x is signed with library validation (0x2000) without ${DISABLE_LV}: dyld would load the injector, library validation would reject it (it is not signed by the program's team), and dyld would kill the program at launch ("could not be loaded"). Use a build signed without library validation, or with ${DISABLE_LV}.`,
    launchFails: true,
  };

  it('0x800 (restrict) blocks, with or without the entitlements: it would run unpatched', () => {
    expect(hardenedRuntimeBlocker('/opt/x', 'CodeDirectory v=20500 flags=0x800(restrict) hashes=9', '')).toEqual(
      RESTRICTED,
    );
    expect(
      hardenedRuntimeBlocker('/opt/x', 'flags=0x10800(restrict,runtime)', plist([ALLOW_DYLD, DISABLE_LV])),
    ).toEqual(RESTRICTED);
  });

  it('0x2000 (library validation) without the hardened runtime blocks: the program would be killed at launch', () => {
    expect(hardenedRuntimeBlocker('/opt/x', 'flags=0x2000(library-validation)', '')).toEqual(VALIDATED);
    expect(hardenedRuntimeBlocker('/opt/x', 'flags=0x2002(adhoc,library-validation)', plist([ALLOW_DYLD]))).toEqual(
      VALIDATED,
    );
  });

  it('0x2000 with disable-library-validation is not blocked', () => {
    expect(hardenedRuntimeBlocker('/opt/x', 'flags=0x2000(library-validation)', plist([DISABLE_LV]))).toBeNull();
  });

  it('0x10000 (hardened runtime) blocks without the entitlements, and not with both', () => {
    expect(hardenedRuntimeBlocker('/opt/x', 'flags=0x10000(runtime)', '')?.launchFails).toBe(false);
    expect(
      hardenedRuntimeBlocker('/opt/x', 'flags=0x12000(library-validation,runtime)', plist([ALLOW_DYLD]))?.launchFails,
    ).toBe(true);
    expect(
      hardenedRuntimeBlocker('/opt/x', 'flags=0x12000(library-validation,runtime)', plist([ALLOW_DYLD, DISABLE_LV])),
    ).toBeNull();
  });

  it('every other flag lets the injector in', () => {
    // Every bit but 0x10000, 0x2000 and 0x800.
    expect(hardenedRuntimeBlocker('/opt/x', 'flags=0xfffed7ff', '')).toBeNull();
    expect(hardenedRuntimeBlocker('/opt/x', 'flags=0x7ff', '')).toBeNull();
  });

  it('a setuid or setgid file blocks (it would run unpatched); a plain one does not', () => {
    const dir = folder();
    const uid = file(dir, 'uid', 0o755);
    chmodSync(uid, 0o4755);
    const gid = file(dir, 'gid', 0o755);
    chmodSync(gid, 0o2755);
    const reason = (f: string, which: string) =>
      `${f} is ${which}: dyld removes DYLD_INSERT_LIBRARIES from programs that change ids at launch, so it would run unpatched. Run a copy without the ${which} bit, or embed metal-cap-shim as a library.`;
    expect([
      setIdBlocker(uid),
      setIdBlocker(gid),
      setIdBlocker(file(dir, 'plain', 0o755)),
      setIdBlocker(path.join(dir, 'none')),
    ]).toEqual([
      { reason: reason(uid, 'setuid'), launchFails: false },
      { reason: reason(gid, 'setgid'), launchFails: false },
      null,
      null,
    ]);
  });
});

describe('codesign as installed: the current one and an older one without --xml', () => {
  afterEach(() => {
    fakeCodesign = SYSTEM_TOOLS.codesign;
  });
  // exec asks codesign by its absolute path; the fake is handed to the check the same way.
  function withCodesign(kind: 'current' | 'old'): string {
    const dir = folder();
    fakeCodesign = path.join(installFakeCodesign(dir, kind), 'codesign');
    return dir;
  }

  it.each(['current', 'old'] as const)(
    '%s codesign: a hardened program is found, and both entitlements clear it',
    (kind) => {
      const dir = withCodesign(kind);
      const hardened = signedProgram(dir, 'hardened', '0x10000(runtime)', [ALLOW_DYLD]);
      expect(injectionBlocker(hardened, 'darwin', fakeCodesign)).toEqual(
        hardenedRuntimeBlocker(hardened, 'flags=0x10000(runtime)', `<key>${ALLOW_DYLD}</key><true/>`),
      );
      expect(injectionBlocker(hardened, 'darwin', fakeCodesign)?.launchFails).toBe(true);
      expect(
        injectionBlocker(
          signedProgram(dir, 'both', '0x10000(runtime)', [ALLOW_DYLD, DISABLE_LV]),
          'darwin',
          fakeCodesign,
        ),
      ).toBeNull();
      expect(injectionBlocker(signedProgram(dir, 'unsigned', null, []), 'darwin', fakeCodesign)).toBeNull();
    },
  );

  it('restricted, library-validated and setuid programs are found as installed', () => {
    const dir = withCodesign('current');
    const restricted = signedProgram(dir, 'restricted', '0x800(restrict)', [ALLOW_DYLD, DISABLE_LV]);
    const validated = signedProgram(dir, 'validated', '0x2000(library-validation)', []);
    const setuid = signedProgram(dir, 'setuid', null, []);
    chmodSync(setuid, 0o4755);
    expect([
      injectionBlocker(restricted, 'darwin', fakeCodesign),
      injectionBlocker(validated, 'darwin', fakeCodesign),
      injectionBlocker(setuid, 'darwin', fakeCodesign),
    ]).toEqual([
      hardenedRuntimeBlocker(restricted, 'flags=0x800', ''),
      hardenedRuntimeBlocker(validated, 'flags=0x2000', ''),
      setIdBlocker(setuid),
    ]);
    expect(
      injectionBlocker(
        signedProgram(dir, 'validated-ok', '0x2000(library-validation)', [DISABLE_LV]),
        'darwin',
        fakeCodesign,
      ),
    ).toBeNull();
  });

  it('the old codesign really rejects --xml (so the retry without it is what finds the signature)', () => {
    const dir = withCodesign('old');
    const hardened = signedProgram(dir, 'hardened', '0x10000(runtime)', []);
    // The blob form carries a binary header before the plist; the entitlements are read from the plist in it.
    expect(injectionBlocker(hardened, 'darwin', fakeCodesign)).toEqual(
      hardenedRuntimeBlocker(hardened, 'flags=0x10000(runtime)', ''),
    );
  });
});

describe('the injector there but not the native module (macOS: an addon that will not load): nothing is injected', () => {
  const NOT_LOADED = {
    reason: 'native-module-unavailable',
    detail:
      'the native module could not be loaded (dlopen failed); reinstall metal-cap-shim or run `npx node-gyp rebuild` in its folder',
  } as const;
  const WHY = `${NOT_LOADED.detail}; without it exec cannot check this host before injecting`;

  it('fails closed with the error strict apply throws for the reason: NativeError ERR_NATIVE_UNAVAILABLE', () => {
    const e = thrown(() => unguardedInjection(NOT_LOADED, { command: 'llama-server' }));
    expect(e).toBeInstanceOf(NativeError);
    expect(e).toMatchObject({
      code: 'ERR_NATIVE_UNAVAILABLE',
      message: `${WHY} (--allow-unpatched runs the program unpatched)`,
    });
    // --allow-unpatched is the only way past it; --force is not.
    expect(() => unguardedInjection(NOT_LOADED, { command: 'llama-server', allowUnpatched: false })).toThrow(
      NativeError,
    );
  });

  it('--allow-unpatched: the notice to print before the program runs unpatched', () => {
    expect(unguardedInjection(NOT_LOADED, { command: 'llama-server', allowUnpatched: true })).toBe(
      `${WHY}: running llama-server unpatched (--allow-unpatched)`,
    );
  });

  it('a simulated build that will not load elsewhere: UnsupportedPlatformError, as strict apply', () => {
    const e = thrown(() =>
      unguardedInjection({ reason: 'unsupported-platform', detail: 'no simulated Metal' }, { command: 'true' }),
    );
    expect(e).toBeInstanceOf(UnsupportedPlatformError);
    expect(e).toMatchObject({
      code: 'ERR_UNSUPPORTED_PLATFORM',
      message:
        'no simulated Metal; without it exec cannot check this host before injecting (--allow-unpatched runs the program unpatched)',
    });
  });
});

describeSim('prepareExec on bare metal (M1 Ultra snapshot): the guard, the blockers, the order of the checks', () => {
  const profile = resolveProfile('cua-release');
  const TRUE = resolveCommand('true')!;
  const REFUSAL =
    'refusing to raise Metal answers: this host is not a virtual machine (hw.model Mac13,2), so the GPU really is what it reports. The profile would raise device 0 (AGXG13DDevice): apple8, apple9, maxThreadgroupMemoryLength 32768 → 65536. Pass { force: true } (CLI: --force) to do it anyway; a profile that only lowers answers (mask-apple5 on an Apple GPU) needs no force.';
  useSimulation('m1-ultra-bare-metal');
  beforeAll(() => requireSimBuild());

  it('raising answers on bare metal is refused (ERR_REFUSED_BARE_METAL), before anything runs', () => {
    const e = thrown(() => prepareExec({ profile, command: 'true', args: [] }, 'linux'));
    expect(e).toBeInstanceOf(RefusedError);
    expect(e).toMatchObject({ code: 'ERR_REFUSED_BARE_METAL', message: REFUSAL });
  });

  it('the default profile changes nothing on bare metal, so it is never refused there: the injector, one no-change warning', () => {
    expect(prepareExec({ profile: resolveProfile(), command: 'true', args: [] }, 'linux')).toEqual({
      injector: injectorPath(),
      resolved: TRUE,
      // On bare metal MLX reads the GPU's own architecture: nothing is offered, so the bound profile has no field.
      profile: (({ mlxArchitecture: _, ...bound }) => bound)({ ...resolveProfile(), appleFamilyMax: 1007 }),
      warnings: [{ code: 'no-change', message: 'the profile changes no answer on this device' }],
      unpatched: null,
    });
  });

  it('--allow-unpatched turns the refusal into a notice and runs the program without the injector', () => {
    expect(prepareExec({ profile, command: 'true', args: [], allowUnpatched: true }, 'linux')).toEqual({
      injector: null,
      resolved: TRUE,
      warnings: [],
      unpatched: `${REFUSAL} Running true unpatched (--allow-unpatched).`,
    });
  });

  it('--force: the injector, with the warnings applying the profile would give on this device', () => {
    expect(prepareExec({ profile, command: 'true', args: [], force: true }, 'linux')).toEqual({
      injector: SO,
      resolved: TRUE,
      profile,
      warnings: WARNINGS_FORCED,
      unpatched: null,
    });
  });

  it('a masking profile needs no force', () => {
    expect(prepareExec({ profile: resolveProfile('mask-apple5'), command: 'true', args: [] }, 'linux')).toEqual({
      injector: SO,
      resolved: TRUE,
      profile: resolveProfile('mask-apple5'),
      warnings: [],
      unpatched: null,
    });
  });

  it('a SIP-protected program: ERR_INJECTION_BLOCKED; --allow-unpatched runs it with the injector all the same', () => {
    const why = injectionBlocker('/bin/sh', 'darwin', fakeCodesign)!.reason;
    const e = thrown(() => prepareExec({ profile, command: '/bin/sh', args: [], force: true }, 'darwin'));
    expect(e).toBeInstanceOf(RefusedError);
    expect(e).toMatchObject({ code: 'ERR_INJECTION_BLOCKED', message: `${why} (--allow-unpatched runs it anyway)` });
    expect(prepareExec({ profile, command: '/bin/sh', args: [], force: true, allowUnpatched: true }, 'darwin')).toEqual(
      {
        injector: SO,
        resolved: '/bin/sh',
        profile,
        warnings: WARNINGS_FORCED,
        unpatched: null,
      },
    );
  });

  it('a missing command: ERR_COMMAND_NOT_FOUND; a bad --trace is found first', () => {
    expect(thrown(() => prepareExec({ profile, command: 'no-such-command-xyz', args: [], force: true }))).toEqual(
      new SpawnError('ERR_COMMAND_NOT_FOUND', 'command not found: no-such-command-xyz'),
    );
    expect(
      thrown(() =>
        prepareExec({ profile, command: 'no-such-command-xyz', args: [], traceFile: '/nonexistent/t.json' }),
      ),
    ).toMatchObject({
      code: 'ERR_TRACE_FILE',
    });
  });

  it('no injector (no simulated Metal selected on Linux): UnsupportedPlatformError, or a notice with --allow-unpatched', () => {
    const saved = process.env[SIM];
    delete process.env[SIM];
    try {
      const e = thrown(() => prepareExec({ profile, command: 'true', args: [], force: true }));
      expect(e).toBeInstanceOf(UnsupportedPlatformError);
      expect(e).toMatchObject({
        message: `${missingInjectorReason()} (--allow-unpatched runs the program unpatched)`,
      });
      expect(prepareExec({ profile, command: 'true', args: [], allowUnpatched: true })).toEqual({
        injector: null,
        resolved: TRUE,
        warnings: [],
        unpatched: `${missingInjectorReason()}: running true unpatched (--allow-unpatched)`,
      });
    } finally {
      process.env[SIM] = saved;
    }
  });
});

// Over a simulated Metal with no device (the empty snapshot): nothing to guard and nothing to warn about, so the
// program runs with the injector, which then patches whatever device the program finds.
describeSim('prepareExec with no Metal device here', () => {
  useSimulation('');
  beforeAll(() => requireSimBuild());

  it('no refusal without --force and no warnings: the injector, the program, nothing else', () => {
    expect(prepareExec({ profile: resolveProfile('cua-release'), command: 'true', args: [] }, 'linux')).toEqual({
      injector: injectorPath(),
      resolved: resolveCommand('true'),
      profile: resolveProfile('cua-release'),
      warnings: [],
      unpatched: null,
    });
    expect(injectorPath()).not.toBeNull();
  });

  it('the default with no chip to read: apple7, and the one warning that says so', () => {
    expect(prepareExec({ profile: resolveProfile(), command: 'true', args: [] }, 'linux')).toEqual({
      injector: injectorPath(),
      resolved: resolveCommand('true'),
      profile: resolveProfile('apple7'),
      warnings: [
        {
          code: 'host-unknown-fallback',
          message:
            'host-family claims the host chip’s own family, but this host’s chip is unknown (it reports no machdep.cpu.brand_string): profile apple7 is used instead (name a profile to choose another)',
        },
      ],
      unpatched: null,
    });
  });

  it('profile host with no chip to read: refused (ERR_HOST_UNKNOWN), or run unpatched with --allow-unpatched, never a guess', () => {
    const why =
      'host claims the host chip’s own answers, but this host’s chip is unknown (it reports no machdep.cpu.brand_string), so nothing is claimed rather than a guess';
    expect(thrown(() => prepareExec({ profile: resolveProfile('host'), command: 'true', args: [] }, 'linux'))).toEqual(
      new RefusedError(`${why} (--allow-unpatched runs the program unpatched)`, 'ERR_HOST_UNKNOWN'),
    );
    expect(
      prepareExec({ profile: resolveProfile('host'), command: 'true', args: [], allowUnpatched: true }, 'linux'),
    ).toEqual({
      injector: null,
      resolved: resolveCommand('true'),
      warnings: [],
      unpatched: `${why}. Running true unpatched (--allow-unpatched).`,
    });
  });
});
