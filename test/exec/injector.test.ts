// lib/exec/injector.ts: where the injector is looked for, the environment the child gets (the preload variable, the
// encoded profile, the status fd), and what the injector reports back over that fd.
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  childEnvironment,
  INJECT_ENV,
  injectorCandidates,
  injectorPath,
  missingInjectorReason,
  parseInjectorStatus,
  preloadVariable,
} from '../../lib/exec/injector.js';
import { encodeNativeProfile, resolveProfile } from '../../lib/patch/profiles.js';
import { describeSim, requireSimBuild, root } from '../support/helpers.js';
import { useSimulation } from '../support/simulation.js';

const SIM = 'METAL_CAP_SHIM_SIM_SNAPSHOT';
const SO = path.join(root, 'build', 'Release', 'libmetal_cap_shim_inject.so');

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
