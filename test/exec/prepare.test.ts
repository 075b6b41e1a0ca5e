// exec's planning, in-process: what runs, or why not. The simulated Metal answers from the bare-metal M1 Ultra
// snapshot, so the bare-metal guard has something to refuse, and from no snapshot at all, so there is nothing to guard
// (useSimulation, per describe block). The spawn suite (test/cli/exec.test.ts) keeps the CLI's end-to-end behaviour;
// the injector, the command, the trace and the signals have tests of their own names.
import { chmodSync, mkdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { NativeError, RefusedError, SpawnError, UnsupportedPlatformError } from '../../lib/core/errors.js';
import {
  hardenedRuntimeBlocker,
  INJECTION_ENTITLEMENTS,
  injectionBlocker,
  setIdBlocker,
} from '../../lib/exec/codesign.js';
import { resolveCommand } from '../../lib/exec/command.js';
import { injectorPath, missingInjectorReason } from '../../lib/exec/injector.js';
import { prepareExec, unguardedInjection } from '../../lib/exec/prepare.js';
import { resolveProfile } from '../../lib/patch/profiles.js';
import { CUA_RELEASE_ON_M1_ULTRA } from '../support/apply-helpers.js';
import { installFakeCodesign, signedProgram } from '../support/codesign-fake.js';
import { describeSim, requireSimBuild, root, thrown } from '../support/helpers.js';
import { useSimulation } from '../support/simulation.js';
import { SYSTEM_TOOLS } from '../../lib/exec/system-tools.js';
import { tempFolders } from '../support/temp-folders.js';

/** The codesign the signature checks ask: the system's, or a suite's fake. */
let fakeCodesign: string = SYSTEM_TOOLS.codesign;

const [ALLOW_DYLD, DISABLE_LV] = INJECTION_ENTITLEMENTS;
const SIM = 'METAL_CAP_SHIM_SIM_SNAPSHOT';
const SO = path.join(root, 'build', 'Release', 'libmetal_cap_shim_inject.so');

/** What applying cua-release to the bare-metal M1 Ultra warns about. */
const WARNINGS_FORCED = CUA_RELEASE_ON_M1_ULTRA;

const { folder, file } = tempFolders('mcs-exec-plan-');

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

describe("the notarized Ollama.app's binaries: the signing check says what to run instead", () => {
  // Stand-ins laid out as the app is, signed as Ollama's scripts/build_darwin.sh signs them: the hardened runtime, no
  // entitlements. The same signature elsewhere gets the general reason only.
  function app(dir: string, name: string): string {
    const resources = path.join(dir, 'Ollama.app', 'Contents', 'Resources');
    mkdirSync(resources, { recursive: true });
    return signedProgram(resources, name, '0x10000(runtime)', []);
  }

  it.each(['ollama', 'llama-server'])('Contents/Resources/%s, found through a symlink on PATH', (name) => {
    const dir = folder();
    const codesign = path.join(installFakeCodesign(dir), 'codesign');
    const binary = app(dir, name);
    const link = path.join(dir, 'bin', name);
    symlinkSync(binary, link);
    const general = hardenedRuntimeBlocker(binary, 'flags=0x10000(runtime)', '')!;
    expect(injectionBlocker(link, 'darwin', codesign)).toEqual({
      reason: `${general.reason} This program is the notarized Ollama.app's, which Ollama's scripts/build_darwin.sh signs with the hardened runtime (codesign --options=runtime) and no entitlements file: run an Ollama built on this Mac instead: from source (docs/development.md in its repository), Homebrew's formula built here (brew install --build-from-source ollama), or your own copy of the app re-signed ad hoc (cp -R /Applications/Ollama.app ~/Ollama-shim.app, then codesign --force --sign - on its Contents/Resources/ollama, and on llama-server beside it from v0.30.0), run as exec -- ~/Ollama-shim.app/Contents/Resources/ollama serve.`,
      launchFails: false,
    });
  });

  it('an ollama outside the app, or the app re-signed without the runtime, gets no word about the app', () => {
    const dir = folder();
    const codesign = path.join(installFakeCodesign(dir), 'codesign');
    const elsewhere = signedProgram(dir, 'ollama', '0x10000(runtime)', []);
    expect(injectionBlocker(elsewhere, 'darwin', codesign)).toEqual(
      hardenedRuntimeBlocker(elsewhere, 'flags=0x10000(runtime)', ''),
    );
    const resigned = app(dir, 'ollama');
    writeFileSync(`${resigned}.flags`, '0x2(adhoc)');
    expect(injectionBlocker(resigned, 'darwin', codesign)).toBeNull();
  });
});
