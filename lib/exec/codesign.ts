/**
 * Whether DYLD_INSERT_LIBRARIES can reach a program on macOS: System Integrity Protection's folders, a script's
 * interpreter, setuid and setgid files, and the code signature's flags and entitlements as codesign prints them.
 */
import { spawnSync } from 'node:child_process';
import { SYSTEM_TOOLS } from './system-tools.js';
import { closeSync, openSync, readSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';

/** Where macOS System Integrity Protection strips DYLD_* variables from the programs it protects. */
export const SIP_PROTECTED_DIRS = ['/System/', '/usr/bin/', '/bin/', '/sbin/', '/usr/sbin/', '/usr/libexec/'];

function shebangInterpreter(file: string): string | null {
  try {
    const fd = openSync(file, 'r');
    const buf = Buffer.alloc(256);
    const n = readSync(fd, buf, 0, buf.length, 0);
    closeSync(fd);
    const text = buf.subarray(0, n).toString('latin1');
    if (!text.startsWith('#!')) return null;
    return text.slice(2).split('\n')[0]!.trim().split(/\s+/)[0] ?? null;
  } catch {
    return null;
  }
}

/** Entitlements a hardened-runtime program needs before dyld lets our injector in. */
export const INJECTION_ENTITLEMENTS = [
  'com.apple.security.cs.allow-dyld-environment-variables',
  'com.apple.security.cs.disable-library-validation',
] as const;

/** Why injection cannot work for a program. */
export interface InjectionBlocker {
  reason: string;
  /**
   * True when the program would not even start with the injector inserted (dyld kills it at launch), so
   * `--allow-unpatched` cannot run it either; false when it would only run unpatched.
   */
  launchFails: boolean;
}

/** True when `entitlements` (codesign's XML plist, its older raw blob, or its `[Dict]` text form) grants `key`. */
export function hasEntitlement(entitlements: string, key: string): boolean {
  const name = key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return (
    new RegExp(`<key>\\s*${name}\\s*</key>\\s*<true\\s*/>`).test(entitlements) ||
    new RegExp(`\\[Key\\]\\s*${name}\\s*\\[Value\\]\\s*\\[Bool\\]\\s*true`).test(entitlements)
  );
}

/** Code-signing flags (`CS_*` in the kernel's cs_blobs.h) that decide whether dyld lets an inserted library in. */
export const CODESIGN_FLAGS = Object.freeze({ restrict: 0x800, libraryValidation: 0x2000, runtime: 0x10000 });

/**
 * Reads what `codesign -d --verbose=1 --entitlements - FILE` printed: the `CodeDirectory … flags=0x…` line on stderr
 * (codesign prints it only with -v/--verbose) and the entitlements on stdout. Null when nothing in the signature
 * stops the injector; otherwise why, for each flag that matters:
 * - `restrict` (0x800): dyld removes every DYLD_* variable from a restricted program, whatever its entitlements, so it
 *   would run unpatched;
 * - `runtime` (0x10000, the hardened runtime): DYLD_* is ignored without allow-dyld-environment-variables, and the
 *   injector is rejected at launch without disable-library-validation (the runtime implies library validation);
 * - `library-validation` (0x2000) without the hardened runtime: dyld loads the injector, library validation rejects
 *   it (it is not signed by the program's team), and the program is killed at launch, unless it has
 *   disable-library-validation.
 * A pure function of codesign's output (setuid and setgid files are judged from the file itself: injectionBlocker).
 */
export function hardenedRuntimeBlocker(
  file: string,
  codesignStderr: string,
  entitlements: string,
): InjectionBlocker | null {
  const match = /flags=0x([0-9a-f]+)/i.exec(codesignStderr);
  if (!match) return null;
  const flags = parseInt(match[1]!, 16);
  const [allowDyld, disableValidation] = INJECTION_ENTITLEMENTS.map((e) => hasEntitlement(entitlements, e));
  if ((flags & CODESIGN_FLAGS.restrict) !== 0) {
    return {
      reason: `${file} is signed with the restrict flag (0x800): dyld removes DYLD_INSERT_LIBRARIES from restricted programs whatever their entitlements, so it would run unpatched. Use a build signed without it, or embed metal-cap-shim as a library.`,
      launchFails: false,
    };
  }
  if ((flags & CODESIGN_FLAGS.runtime) !== 0) {
    if (allowDyld && disableValidation) return null;
    if (allowDyld) {
      // dyld honours DYLD_INSERT_LIBRARIES here, then library validation rejects an injector that is not signed by the
      // program's own team, and dyld stops the process before main ("could not be loaded").
      return {
        reason: `${file} is signed with the hardened runtime with ${INJECTION_ENTITLEMENTS[0]} but without ${INJECTION_ENTITLEMENTS[1]}: dyld would load the injector, library validation would reject it (it is not signed by the program's team), and dyld would kill the program at launch ("could not be loaded"). Use a build signed with ${INJECTION_ENTITLEMENTS[1]} too.`,
        launchFails: true,
      };
    }
    return {
      reason: `${file} is signed with the hardened runtime without ${INJECTION_ENTITLEMENTS[0]}${disableValidation ? '' : ` and ${INJECTION_ENTITLEMENTS[1]}`}, so dyld ignores DYLD_INSERT_LIBRARIES for it and it would run unpatched. Use a build without the hardened runtime, or embed metal-cap-shim as a library.`,
      launchFails: false,
    };
  }
  if ((flags & CODESIGN_FLAGS.libraryValidation) !== 0 && !disableValidation) {
    return {
      reason: `${file} is signed with library validation (0x2000) without ${INJECTION_ENTITLEMENTS[1]}: dyld would load the injector, library validation would reject it (it is not signed by the program's team), and dyld would kill the program at launch ("could not be loaded"). Use a build signed without library validation, or with ${INJECTION_ENTITLEMENTS[1]}.`,
      launchFails: true,
    };
  }
  return null;
}

/**
 * A setuid or setgid file: the kernel starts it with other ids, and dyld then removes every DYLD_* variable, so it
 * would run unpatched. Null for any other file (or one that cannot be read).
 */
export function setIdBlocker(file: string): InjectionBlocker | null {
  let mode: number;
  try {
    mode = statSync(file).mode;
  } catch {
    return null;
  }
  // S_ISUID and S_ISGID (sys/stat.h); node:fs does not export them.
  if ((mode & 0o6000) === 0) return null;
  const which = (mode & 0o4000) !== 0 ? 'setuid' : 'setgid';
  return {
    reason: `${file} is ${which}: dyld removes DYLD_INSERT_LIBRARIES from programs that change ids at launch, so it would run unpatched. Run a copy without the ${which} bit, or embed metal-cap-shim as a library.`,
    launchFails: false,
  };
}

/**
 * Runs codesign the way its output is read: `--verbose=1` for the flags line, `--entitlements -` for the
 * entitlements. `--xml` asks for a plist where codesign has the option (macOS 12+); older codesign rejects it and
 * prints the raw plist blob without it. Null when codesign is missing or the file is not signed.
 */
function codesignOf(file: string, codesign: string): { stderr: string; stdout: string } | null {
  const run = (extra: string[]) =>
    spawnSync(codesign, ['-d', '--verbose=1', '--entitlements', '-', ...extra, file], {
      encoding: 'utf8',
      timeout: 10_000,
    });
  let r = run(['--xml']);
  if (r.error) return null;
  if (r.status !== 0 && !/not signed/i.test(r.stderr ?? '')) r = run([]);
  if (r.error || r.status !== 0) return null;
  return { stderr: r.stderr ?? '', stdout: r.stdout ?? '' };
}

/** Bounds of what machOSegments reads: load commands of one slice, slices of a universal file. */
const MACH_O_LIMITS = Object.freeze({ loadCommandBytes: 16 * 1024 * 1024, slices: 32 });

/** One slice of a Mach-O file: its CPU type and subtype (mach_header's), and its sections' names. */
export interface MachOSlice {
  cpuType: number;
  cpuSubtype: number;
  sections: { segment: string; section: string }[];
}

/**
 * The (segment, section) names of every section in a Mach-O file's load commands, over every slice of a universal
 * (fat) file; null when the file is not Mach-O or cannot be read.
 */
export function machOSections(file: string): { segment: string; section: string }[] | null {
  return machOSlices(file)?.flatMap((s) => s.sections) ?? null;
}

/**
 * Every slice of a Mach-O file (one for a thin image), each with its CPU type and sections; null when the file is not
 * Mach-O or cannot be read. Reads the headers and load commands only, each once, within MACH_O_LIMITS.
 */
export function machOSlices(file: string): MachOSlice[] | null {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return null;
  }
  const read = (offset: number, length: number): Buffer | null => {
    const buf = Buffer.alloc(length);
    try {
      return readSync(fd, buf, 0, length, offset) === length ? buf : null;
    } catch {
      return null;
    }
  };
  const name = (buf: Buffer, at: number) =>
    buf
      .subarray(at, at + 16)
      .toString('latin1')
      .replace(/\0.*$/s, '');
  // One thin image at `base`: mach_header(_64), then sizeofcmds bytes of load commands (little-endian: every Mac's).
  const slice = (base: number): MachOSlice | null => {
    const header = read(base, 32);
    if (header === null) return null;
    const magic = header.readUInt32LE(0);
    if (magic !== 0xfeedface && magic !== 0xfeedfacf) return null;
    const is64 = magic === 0xfeedfacf;
    const ncmds = header.readUInt32LE(16);
    const sizeofcmds = header.readUInt32LE(20);
    if (sizeofcmds > MACH_O_LIMITS.loadCommandBytes) return null;
    const cmds = read(base + (is64 ? 32 : 28), sizeofcmds);
    if (cmds === null) return null;
    const found: { segment: string; section: string }[] = [];
    let at = 0;
    for (let i = 0; i < ncmds && at + 8 <= cmds.length; i++) {
      const cmd = cmds.readUInt32LE(at);
      const cmdsize = cmds.readUInt32LE(at + 4);
      if (cmdsize < 8 || at + cmdsize > cmds.length) break;
      // LC_SEGMENT (0x1): 56-byte command, 68-byte sections; LC_SEGMENT_64 (0x19): 72 and 80.
      const segment64 = cmd === 0x19;
      if (cmd === 0x1 || segment64) {
        const nsects = cmds.readUInt32LE(at + (segment64 ? 64 : 48));
        const first = at + (segment64 ? 72 : 56);
        const size = segment64 ? 80 : 68;
        for (let k = 0; k < nsects && first + (k + 1) * size <= at + cmdsize; k++) {
          const s = first + k * size;
          found.push({ segment: name(cmds, s + 16), section: name(cmds, s) });
        }
      }
      at += cmdsize;
    }
    return { cpuType: header.readUInt32LE(4), cpuSubtype: header.readUInt32LE(8), sections: found };
  };
  try {
    const head = read(0, 8);
    if (head === null) return null;
    const magic = head.readUInt32BE(0);
    // FAT_MAGIC / FAT_MAGIC_64: big-endian fat_header, then fat_arch (20 bytes) or fat_arch_64 (32 bytes) records.
    if (magic !== 0xcafebabe && magic !== 0xcafebabf) {
      const only = slice(0);
      return only === null ? null : [only];
    }
    const count = head.readUInt32BE(4);
    // Java class files share 0xcafebabe; their "count" is a version, far above any real slice count.
    if (count === 0 || count > MACH_O_LIMITS.slices) return null;
    const wide = magic === 0xcafebabf;
    const archs = read(8, count * (wide ? 32 : 20));
    if (archs === null) return null;
    const found: MachOSlice[] = [];
    for (let i = 0; i < count; i++) {
      const at = i * (wide ? 32 : 20);
      const offset = wide ? Number(archs.readBigUInt64BE(at + 8)) : archs.readUInt32BE(at + 8);
      const one = slice(offset);
      if (one === null) return null;
      found.push(one);
    }
    return found;
  } finally {
    closeSync(fd);
  }
}

/**
 * A program with a `__RESTRICT,__restrict` section: dyld treats it as restricted (MachOFile::isRestricted) and removes
 * every DYLD_* variable, so it would run unpatched, like the restrict signing flag. Any slice of a universal file
 * counts. Null for any other file.
 */
export function restrictSegmentBlocker(file: string): InjectionBlocker | null {
  const sections = machOSections(file);
  if (sections === null || !sections.some((s) => s.segment === '__RESTRICT' && s.section === '__restrict')) return null;
  return {
    reason: `${file} has a __RESTRICT,__restrict section: dyld treats it as restricted and removes DYLD_INSERT_LIBRARIES, so it would run unpatched. Use a build linked without that section, or embed metal-cap-shim as a library.`,
    launchFails: false,
  };
}

/** mach/machine.h: CPU_TYPE_ARM64, and CPU_SUBTYPE_ARM64E under CPU_SUBTYPE_MASK's capability bits. */
const CPU_TYPE_ARM64 = 0x0100000c;
const CPU_SUBTYPE_ARM64E = 2;
const CPU_SUBTYPE_CAPABILITY_BITS = 0xff000000;

/** True for an arm64e slice (pointer authentication ABI). */
function isArm64e(s: MachOSlice): boolean {
  return s.cpuType === CPU_TYPE_ARM64 && (s.cpuSubtype & ~CPU_SUBTYPE_CAPABILITY_BITS) === CPU_SUBTYPE_ARM64E;
}

/**
 * A program built for arm64e only: the injector has no arm64e slice (one built outside Xcode's toolchain would lack
 * pointer authentication and crash there), so dyld could not load it and would stop the program at launch. Null for
 * any other file.
 */
export function arm64eOnlyBlocker(file: string): InjectionBlocker | null {
  const slices = machOSlices(file);
  if (slices === null || slices.length === 0 || !slices.every(isArm64e)) return null;
  return {
    reason: `${file} is built for arm64e only, and the injector has arm64 and x86_64 slices (not arm64e, which needs Apple's pointer authentication): dyld could not load it and would stop the program. Run an arm64 build of the program.`,
    launchFails: true,
  };
}

/**
 * Programs whose publisher's build script is known to sign them in a way that stops the injector, matched by their
 * resolved path, with what a user can run instead. exec only says this; it never changes the user's files.
 */
export const KNOWN_SIGNED_PROGRAMS: readonly { pattern: RegExp; what: string; instead: string }[] = Object.freeze([
  {
    // Ollama's scripts/build_darwin.sh (v0.32.15) signs Contents/Resources/ollama and llama-server with
    // `codesign --options=runtime` and no --entitlements; before v0.30.0 the runners were `ollama runner` itself.
    pattern: /\/Ollama\.app\/Contents\/Resources\/(?:ollama|llama-server)$/,
    what: "the notarized Ollama.app's, which Ollama's scripts/build_darwin.sh signs with the hardened runtime (codesign --options=runtime) and no entitlements file",
    instead:
      "run an Ollama built on this Mac instead: from source (docs/development.md in its repository), Homebrew's formula built here (brew install --build-from-source ollama), or your own copy of the app re-signed ad hoc (cp -R /Applications/Ollama.app ~/Ollama-shim.app, then codesign --force --sign - on its Contents/Resources/ollama, and on llama-server beside it from v0.30.0), run as exec -- ~/Ollama-shim.app/Contents/Resources/ollama serve",
  },
]);

/** The blocker with what is known about the program's signing and what to run instead, where the program is known. */
function withKnownSigning(file: string, blocker: InjectionBlocker | null): InjectionBlocker | null {
  const known = KNOWN_SIGNED_PROGRAMS.find((k) => k.pattern.test(file));
  if (blocker === null || known === undefined) return blocker;
  return { ...blocker, reason: `${blocker.reason} This program is ${known.what}: ${known.instead}.` };
}

function signatureBlocker(file: string, codesign: string): InjectionBlocker | null {
  const arm64e = arm64eOnlyBlocker(file);
  if (arm64e !== null) return arm64e;
  const setId = setIdBlocker(file);
  if (setId !== null) return setId;
  const restricted = restrictSegmentBlocker(file);
  if (restricted !== null) return restricted;
  const signature = codesignOf(file, codesign);
  return signature === null
    ? null
    : withKnownSigning(file, hardenedRuntimeBlocker(file, signature.stderr, signature.stdout));
}

/**
 * Why DYLD_INSERT_LIBRARIES would not reach the program on macOS (a SIP-protected binary, a script run by one, a
 * setuid or setgid file, or a signature that stops the injector: restricted, hardened runtime or library validation
 * without the entitlements; for a script, its interpreter's), or null when nothing is known to stop it.
 * `platform` and `codesign` exist for tests: the checks are pure functions of them, and run wherever a codesign is
 * (by its absolute path, never found on PATH).
 */
export function injectionBlocker(
  command: string,
  platform: NodeJS.Platform = process.platform,
  codesign: string = SYSTEM_TOOLS.codesign,
): InjectionBlocker | null {
  if (platform !== 'darwin') return null;
  const resolved = realpathOr(command);
  const isProtected = (p: string) => SIP_PROTECTED_DIRS.some((d) => p.startsWith(d));
  if (isProtected(resolved)) {
    return {
      reason: `${resolved} is protected by System Integrity Protection: macOS removes DYLD_INSERT_LIBRARIES from it (and from what it starts), so it would run unpatched. Run the real program directly, not through ${path.basename(resolved)}.`,
      launchFails: false,
    };
  }
  const interpreter = shebangInterpreter(resolved);
  if (interpreter === null) return signatureBlocker(resolved, codesign);
  const realInterpreter = realpathOr(interpreter);
  if (isProtected(realInterpreter)) {
    return {
      reason: `${resolved} is a script run by ${interpreter}, which System Integrity Protection strips of DYLD_INSERT_LIBRARIES, so the programs it starts would run unpatched. Run the real program directly.`,
      launchFails: false,
    };
  }
  // The kernel starts the interpreter, and dyld applies the interpreter's signature, not the script's.
  const blocker = signatureBlocker(realInterpreter, codesign);
  return blocker === null
    ? null
    : { ...blocker, reason: `${resolved} is a script run by ${interpreter}: ${blocker.reason}` };
}

function realpathOr(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return file;
  }
}
