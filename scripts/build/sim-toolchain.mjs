// The Linux test build's toolchain: clang-14 compiling Objective-C++ for GCC's runtime with GNUstep Foundation.
// test/sim-metal/flags, scripts/build/build-sim.mjs and scripts/measure/native-coverage.mjs take their flags from here,
// and what it needs is decided here (SIM_REQUIREMENTS): build-sim.mjs checks it before compiling, scripts/test.sh asks
// for the packages to install.
//
//   node scripts/build/sim-toolchain.mjs --packages [--sanitize]   the Debian packages missing, on one line
import { accessSync, constants as fsConstants, existsSync, readdirSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const simRoot = path.join(repoRoot, 'test', 'sim-metal');
export const buildRoot = path.join(repoRoot, 'build');
export const simLibDir = path.join(buildRoot, 'sim-metal', 'lib');
export const simLibPath = path.join(simLibDir, 'libMetal.so');

function firstLine(cmd, args) {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
      .trim()
      .split('\n')[0];
  } catch {
    return '';
  }
}

/** The file `name` resolves to on `env.PATH`, as a shell would find it, or null. */
export function onPath(name, env = process.env) {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (dir === '') continue;
    const file = path.join(dir, name);
    try {
      accessSync(file, fsConstants.X_OK);
      return file;
    } catch {
      // not in this folder
    }
  }
  return null;
}

/** GCC's include folder as `gcc` on `env.PATH` reports it, or null. */
function gccIncludeDir(env) {
  const gcc = onPath('gcc', env);
  if (gcc === null) return null;
  try {
    return execFileSync(gcc, ['-print-file-name=include'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return null;
  }
}

/**
 * What the simulated build needs, each with the Debian 12 package that brings it and how to tell it is there (the
 * same names on Ubuntu 22.04 and later). `sanitize`: needed only by `build-sim.mjs --sanitize`.
 */
export const SIM_REQUIREMENTS = Object.freeze([
  { what: 'clang++-14', package: 'clang-14', present: (env) => onPath('clang++-14', env) !== null },
  { what: 'gcc', package: 'gcc', present: (env) => onPath('gcc', env) !== null },
  {
    what: "GCC's objc/runtime.h",
    package: 'libobjc-12-dev',
    present: (env) => {
      const dir = gccIncludeDir(env);
      return dir !== null && existsSync(path.join(dir, 'objc', 'runtime.h'));
    },
  },
  {
    what: 'GNUstep Foundation',
    package: 'libgnustep-base-dev',
    present: () => existsSync('/usr/include/GNUstep/Foundation/Foundation.h'),
  },
  { what: 'gnustep-config', package: 'gnustep-make', present: (env) => onPath('gnustep-config', env) !== null },
  // Blocks: Metal's asynchronous calls take completion handlers, and clang's -fblocks needs this runtime.
  { what: 'Block.h', package: 'libblocksruntime-dev', present: () => existsSync('/usr/include/Block.h') },
  {
    what: "clang-14's sanitizer runtimes",
    package: 'libclang-rt-14-dev',
    sanitize: true,
    present: () => {
      const dir = '/usr/lib/llvm-14/lib/clang';
      const tsan = `libclang_rt.tsan-${process.arch === 'arm64' ? 'aarch64' : 'x86_64'}.a`;
      return existsSync(dir) && readdirSync(dir).some((v) => existsSync(path.join(dir, v, 'lib', 'linux', tsan)));
    },
  },
]);

/** The requirements not met on this machine (`sanitize`: those of the sanitizer builds too), in SIM_REQUIREMENTS' order. */
export function missingRequirements({ sanitize = false, env = process.env } = {}) {
  return SIM_REQUIREMENTS.filter((r) => (sanitize || !r.sanitize) && !r.present(env));
}

/** The one line that says what is missing and the command that installs it. */
export function missingLine(missing, command = 'build:sim') {
  const packages = missing.map((r) => r.package);
  const what = missing.map((r) => `${r.what} (${r.package})`).join(', ');
  const them = packages.length === 1 ? 'it' : 'them';
  return `${command}: missing ${what}; install ${them} with: sudo apt-get install -y ${packages.join(' ')}`;
}

/** The C++ compiler: clang++-14, as Debian 12 names it (the first of SIM_REQUIREMENTS). */
export function compiler() {
  const clang = SIM_REQUIREMENTS[0];
  if (!clang.present(process.env)) throw new Error(missingLine([clang], 'the simulated build'));
  return clang.what;
}

/** GNUstep Foundation's header folder. */
export function gnustepHeaders() {
  const configured = firstLine('gnustep-config', ['--variable=GNUSTEP_SYSTEM_HEADERS']);
  if (configured && existsSync(configured)) return configured;
  if (existsSync('/usr/include/GNUstep/Foundation')) return '/usr/include/GNUstep';
  throw new Error('GNUstep Foundation headers not found: install libgnustep-base-dev');
}

/** The folder holding GCC's own objc/runtime.h, which matches the libobjc that GNUstep links; clang's has none. */
export function gccObjcHeaders() {
  const dir = firstLine('gcc', ['-print-file-name=include']);
  if (dir && existsSync(path.join(dir, 'objc', 'runtime.h'))) return dir;
  throw new Error("GCC's objc headers not found: install libobjc-12-dev");
}

/**
 * The options that select GCC's Objective-C runtime and GNUstep's Foundation, without include folders. Blocks are on,
 * as Apple's clang has them by default (Metal's asynchronous calls take completion handlers); they need the
 * BlocksRuntime library, linked ahead of GNUstep, whose own _Block_copy does not copy stack blocks.
 */
export const objcRuntimeOptions = Object.freeze([
  '-fblocks',
  '-fobjc-runtime=gcc',
  '-fconstant-string-class=NSConstantString',
  '-fobjc-exceptions',
  '-DGNUSTEP',
  '-DGNU_RUNTIME=1',
]);

/** Flags to compile Objective-C(++) against GNUstep and GCC's runtime (no language mode, no Metal include). */
export function objcRuntimeFlags() {
  return [...objcRuntimeOptions, `-I${gnustepHeaders()}`, `-I${gccObjcHeaders()}`];
}

export const nativeDir = path.join(repoRoot, 'src-native');
/** Files of src-native/, by path inside it (`engine/patch.mm`). */
export const inNative = (...files) => files.map((f) => path.join(nativeDir, f));
/** Every file of src-native/ whose name ends with `ext`, by path inside it, sorted (its folders included). */
export function nativeFiles(ext) {
  return readdirSync(nativeDir, { recursive: true })
    .map((f) => f.split(path.sep).join('/'))
    .filter((f) => f.endsWith(ext))
    .sort();
}
/** The portable hook engine: built into the addon, the injector and the stress harness. */
export const hookEngine = inNative('engine/swizzle.mm', 'engine/profile.mm', 'engine/patch.mm');
/** Links a program or library against the simulated Metal and GNUstep. */
export const linkSim = [`-L${simLibDir}`, '-lMetal', '-lBlocksRuntime', '-lgnustep-base', '-lobjc', '-lpthread'];

/** The Node-API headers the addon compiles against (node-addon-api's and node-api-headers'). */
export function napiIncludes() {
  const require = createRequire(import.meta.url);
  return [
    `-I${path.dirname(require.resolve('node-addon-api/package.json'))}`,
    `-I${path.join(path.dirname(require.resolve('node-api-headers/package.json')), 'include')}`,
  ];
}

/** How src-native/ and the simulated Metal compile, without an optimisation level (each build adds its own). */
export function simCompileFlags() {
  return [
    '-ObjC++',
    '-std=c++17',
    '-fPIC',
    '-g',
    '-Wall',
    '-Wextra',
    '-Wno-unused-parameter',
    '-Werror',
    // GNUstep's headers trip these under clang; they are not in our code.
    '-Wno-deprecated-declarations',
    '-Wno-objc-root-class',
    ...objcRuntimeFlags(),
    `-I${path.join(simRoot, 'include')}`,
  ];
}

/** What a third-party program needs to compile against the simulated <Metal/Metal.h>. */
export function simCflags() {
  return [...objcRuntimeFlags(), `-I${path.join(simRoot, 'include')}`];
}

/** What it needs to link against the simulated Metal library (found at run time through its rpath). */
export function simLibs() {
  return [`-L${simLibDir}`, `-Wl,-rpath,${simLibDir}`, '-lMetal', '-lBlocksRuntime', '-lgnustep-base', '-lobjc'];
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (process.argv[2] !== '--packages') {
    process.stderr.write('usage: node scripts/build/sim-toolchain.mjs --packages [--sanitize]\n');
    process.exit(2);
  }
  const missing = missingRequirements({ sanitize: process.argv.includes('--sanitize') });
  process.stdout.write(`${missing.map((r) => r.package).join(' ')}\n`);
}
