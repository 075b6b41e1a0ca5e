import { execFileSync, spawnSync, type SpawnSyncOptions, type SpawnSyncReturns } from 'node:child_process';
import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { constants as osConstants } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe } from 'vitest';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const dist = path.join(root, 'dist');
export const cli = path.join(dist, 'cli.js');

/** The simulated-Metal suites run on Linux (the test build); on macOS the addon is the real one. */
export const isSimulatedPlatform = process.platform === 'linux';
/** Simulated-only suites: skipped, visibly, elsewhere. */
export const describeSim = describe.skipIf(!isSimulatedPlatform);

/** Fails the suite early with a clear message when the test build is missing. */
export function requireSimBuild(): void {
  for (const f of [
    'build/Release/metal_cap_shim.node',
    'build/test/sim_fixture.node',
    'build/test/sim_control.node',
    'dist/index.js',
  ]) {
    if (!existsSync(path.join(root, f))) {
      throw new Error(`${f} is missing: run \`npm run build && npm run build:sim\` before the tests`);
    }
  }
}

/** The fixture addon: a Metal consumer compiled separately from metal-cap-shim. */
export interface SimFixture {
  query(all?: boolean): FixtureAnswers | FixtureAnswers[] | null;
  startHammer(threads: number, family: number): void;
  stopHammer(): { calls: number; seen: string[] };
  installForeignHook(className: string, answer: number): boolean;
  removeForeignHook(className: string): boolean;
  methodInfo(
    className: string,
    selector: string,
  ): { own: boolean; imp: string; superImp: string; superclass: string } | null;
  benchQueries(iterations: number): { supportsFamilyNs: number; maxThreadgroupMemoryNs: number };
  strayDevice(className: string, simIndex: number): FixtureAnswers | null;
  /** Calls this process has made to MTLCreateSystemDefaultDevice() / MTLCopyAllDevices() (simulated Metal's counters). */
  deviceCalls(): { MTLCreateSystemDefaultDevice: number; MTLCopyAllDevices: number };
  /** NoCopy buffers this process released after the memory under them was unmapped (simulated Metal's counter). */
  noCopyAfterUnmap(): number;
  noCopyColdPages(): number;
  openLibrary(file: string): void;
  closeLibrary(file: string): void;
  residentPages(file: string): { resident: number; pages: number };
  /** NoCopy buffers this process made without a deallocator (simulated Metal's counter). */
  noCopyWithoutDeallocator(): number;
  /** Descriptors on a doctor-generated file open without close-on-exec when a NoCopy buffer was made (simulated Metal's counter). */
  inheritableDoctorFiles(): number;
}

export interface FixtureAnswers {
  className: string;
  name: string;
  families: Record<string, boolean>;
  maxThreadgroupMemoryLength: number;
  recommendedMaxWorkingSetSize: number;
}

/** Loads the fixture addon; with `global`, its symbols become visible to dlsym(RTLD_DEFAULT). */
export function loadFixture(global = false): SimFixture {
  const file = path.join(root, 'build', 'test', 'sim_fixture.node');
  if (!global) return createRequire(import.meta.url)(file) as SimFixture;
  const module = { exports: {} as SimFixture };
  process.dlopen(module, file, osConstants.dlopen.RTLD_NOW | osConstants.dlopen.RTLD_GLOBAL);
  return module.exports;
}

/**
 * Builds `dir/name`, a minimal Node-API module defining the C functions `symbols` (process.dlopen keeps only a
 * library that registers a module), and loads it into this process RTLD_LOCAL, or RTLD_GLOBAL with `global`.
 * Returns its path.
 */
export function loadLibrary(dir: string, name: string, symbols: string[], global = false): string {
  return loadLibrarySource(dir, name, symbols.map((s) => `void ${s}(void) {}\n`).join(''), global);
}

/** Like loadLibrary, with the library's C source (without the module registration) given whole. */
export function loadLibrarySource(dir: string, name: string, source: string, global = false): string {
  const file = path.join(dir, name);
  const sourceFile = `${file}.c`;
  const napiInclude = path.join(
    path.dirname(createRequire(import.meta.url).resolve('node-api-headers/package.json')),
    'include',
  );
  writeFileSync(sourceFile, `#include <node_api.h>\n${source}NAPI_MODULE_INIT() { return exports; }\n`);
  execFileSync('clang-14', ['-shared', '-fPIC', `-I${napiInclude}`, sourceFile, '-o', file]);
  const scope = global ? osConstants.dlopen.RTLD_GLOBAL : osConstants.dlopen.RTLD_LOCAL;
  process.dlopen({ exports: {} }, file, osConstants.dlopen.RTLD_NOW | scope);
  return file;
}

/** Runs the built CLI; `extra` adds spawn options (e.g. another uid). */
export function runCli(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  input?: string,
  extra: SpawnSyncOptions = {},
): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [cli, ...args], {
    ...extra,
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1', ...env },
    input,
    timeout: 60_000,
  });
}

/** Whether script(1) can give the CLI a pseudo-terminal here (util-linux's, as Debian and Ubuntu have it). */
export const hasScript = spawnSync('script', ['--version'], { encoding: 'utf8' }).status === 0;

/**
 * Runs the CLI on a pseudo-terminal `columns` wide (script(1)): stdout and stderr are both the terminal, and their
 * output comes back together, its newlines as the program wrote them. No colour unless `env` asks (NO_COLOR=1).
 */
export function runCliOnTerminal(
  columns: number,
  args: string[],
  env: NodeJS.ProcessEnv = { NO_COLOR: '1' },
): { status: number | null; output: string } {
  const quoted = [process.execPath, cli, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const r = spawnSync('script', ['-qec', `stty cols ${columns} rows 50 -onlcr; exec ${quoted}`, '/dev/null'], {
    encoding: 'utf8',
    env: {
      ...process.env,
      NO_COLOR: undefined,
      FORCE_COLOR: undefined,
      METAL_CAP_SHIM_SIM_SNAPSHOT: undefined,
      ...env,
    },
    timeout: 60_000,
  });
  return { status: r.status, output: r.stdout };
}

/** Runs an ES module snippet in a fresh Node process (with `env`, e.g. its own simulated snapshot). */
export function runNode(code: string, env: NodeJS.ProcessEnv = {}, extraArgs: string[] = []): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [...extraArgs, '--input-type=module', '-e', code], {
    encoding: 'utf8',
    cwd: root,
    env: { ...process.env, ...env },
    timeout: 60_000,
  });
}

/** JSON printed by a child; fails with the child's stderr when it did not succeed. */
export function jsonFrom<T>(r: SpawnSyncReturns<string>): T {
  if (r.status !== 0) throw new Error(`child exited ${r.status} (${r.signal}): ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

/** The flags script's output, split like a shell would (no paths with spaces here). */
export function simFlags(kind: '--cflags' | '--libs'): string[] {
  return execFileSync(path.join(root, 'test', 'sim-metal', 'flags'), [kind], { encoding: 'utf8', cwd: '/' })
    .trim()
    .split(/\s+/);
}

/**
 * Compiles test/native/<name>.mm (default consumer.mm), a program written only against Apple's documented Metal API,
 * with the flags script, exactly as a third party would. Rebuilt when the source is newer.
 */
export function buildConsumer(name = 'consumer'): string {
  const source = path.join(root, 'test', 'native', `${name}.mm`);
  const out = path.join(root, 'build', 'test', name);
  if (existsSync(out) && statSync(out).mtimeMs > statSync(source).mtimeMs) return out;
  mkdirSync(path.dirname(out), { recursive: true });
  execFileSync('clang++-14', [...simFlags('--cflags'), source, '-o', out, ...simFlags('--libs')], { stdio: 'pipe' });
  return out;
}

/** The error `fn` throws; fails the test when it throws none. */
export function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected an error, none was thrown');
}

/** What a caller sees of the error a call throws: its class, code and message (fails when nothing is thrown). */
export function caught(fn: () => unknown): { name: string; code: string; message: string } {
  try {
    fn();
  } catch (e) {
    const err = e as Error & { code: string };
    return { name: err.constructor.name, code: err.code, message: err.message };
  }
  throw new Error('expected an error, and nothing was thrown');
}
