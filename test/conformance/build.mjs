#!/usr/bin/env node
// Builds llama.cpp's own Metal device code against the simulated Metal, for the conformance suite
// (test/conformance/README.md). For each era of eras.mjs:
//
//   1. `npm pack` its node-llama-cpp tarball into ${XDG_CACHE_HOME:-~/.cache}/metal-cap-shim/tarballs/ (checked
//      against the pinned integrity; never installed, never a dependency), unless a copy with that integrity is there;
//   2. clone the tarball's llama/gitRelease.bundle and take the ggml sources out of it;
//   3. configure what CMake would (ggml-version.h, or the GGML_VERSION/GGML_COMMIT definitions before it) and rewrite
//      the Objective-C object subscripts (SUBSCRIPT_REWRITES); what the era has (eras.mjs init, lacks, chips,
//      tuning) reaches the driver as definitions (driverDefines);
//   4. compile ggml-base and the ggml-metal device sources with clang-19 for GCC's runtime and GNUstep, once per build
//      configuration (arm64 with the macOS 15 SDK, x86_64), into the object cache
//      ${XDG_CACHE_HOME:-~/.cache}/metal-cap-shim/conformance/<era>-<key>/ (steps 1 to 4 are skipped when it holds
//      the era's objects already), and link in the clone
//        build/conformance/<era>-<key>/<arch>/libggml-metal.so      ggml-base + ggml-metal's device code + the driver
//        build/conformance/<era>-<key>/<arch>/conformance.node      the driver as a Node addon (in-process cases)
//        build/conformance/<era>-<key>/<arch>/ggml-metal-driver     the driver as a program (cases through `exec`)
//
// <key> hashes the tarball's integrity, the harness (this folder, the simulated Metal's headers, the toolchain
// script), clang-19's version and the system headers compiled against, so a warm cache or build/ is reused and a
// change to any of them rebuilds. The objects are cached outside the clone, like the real llama.cpp tools
// (scripts/build/llama-tools.mjs), because CI starts from a fresh clone every time and compiling them is about 115 s
// of clang-19 on two cores (docs/measurements.md); the links stay in the clone (about a second per era) because
// they name the clone's own simulated Metal (-rpath). When the cache folder cannot be used (not private, not
// writable) or `--no-cache` is given, everything is built in build/conformance/ as before. Every compile of every
// era goes through one job pool as wide as the machine. Run directly (`node test/conformance/build.mjs [--no-cache]`)
// it builds and prints what it built.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  createReadStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  gccObjcHeaders,
  gnustepHeaders,
  napiIncludes,
  objcRuntimeOptions,
  repoRoot,
  simLibDir,
  simRoot,
} from '../../scripts/build/sim-toolchain.mjs';
import { privateCacheRoot, userCachePath } from '../../scripts/build/user-cache.mjs';
import { BUILD_ARCHES, ERAS, SUBSCRIPT_REWRITES } from './eras.mjs';

const run = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));
export const conformanceRoot = path.join(repoRoot, 'build', 'conformance');

/** A folder of the per-user cache (user-cache.mjs), or `fallback` (a folder in the clone, or null: the era's own
 * folder there) when that cannot be used, with a line saying why. */
function cacheFolder(name, fallback) {
  try {
    return privateCacheRoot(userCachePath(name));
  } catch (err) {
    const instead = fallback === null ? 'build/conformance/<era>-<key>/' : path.relative(repoRoot, fallback);
    process.stderr.write(`conformance build: ${err.message}; building in ${instead} instead\n`);
    if (fallback !== null) mkdirSync(fallback, { recursive: true });
    return fallback;
  }
}
const harnessInclude = path.join(here, 'include');
const harnessSrc = path.join(here, 'src');

/** The SDK version (__MAC_OS_X_VERSION_MAX_ALLOWED) the arm64 configuration builds against: released arm64 builds
 * come from a current Xcode, whose SDK is 15 or later, so residency sets are compiled in. */
const ARM64_SDK = 150000;

/** The compilers: clang-19, which llama.cpp's @available(…, visionOS …) needs (clang-14 rejects it). */
function toolchain() {
  try {
    execFileSync('sh', ['-c', 'command -v clang-19 && command -v clang++-19'], { stdio: 'ignore' });
  } catch {
    throw new Error('clang-19 not found: install it with `apt-get install clang-19` (scripts/test.sh does)');
  }
  return { cc: 'clang-19', cxx: 'clang++-19' };
}

/** A job pool as wide as the machine: every compile of every era waits its turn here. */
function pool(width) {
  let active = 0;
  const queue = [];
  const next = () => {
    if (active >= width || queue.length === 0) return;
    active++;
    const { job, resolve, reject } = queue.shift();
    job()
      .then(resolve, reject)
      .finally(() => {
        active--;
        next();
      });
  };
  return (job) =>
    new Promise((resolve, reject) => {
      queue.push({ job, resolve, reject });
      next();
    });
}

function sha512File(file) {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha512');
    createReadStream(file)
      .on('data', (d) => hash.update(d))
      .on('error', reject)
      .on('end', () => resolve(`sha512-${hash.digest('base64')}`));
  });
}

/** `@scope/name@1.2.3` → `scope-name-1.2.3.tgz`, the name `npm pack` gives it. */
export function tarballName(spec) {
  const at = spec.lastIndexOf('@');
  const name = spec.slice(0, at).replace(/^@/, '').replace('/', '-');
  return `${name}-${spec.slice(at + 1)}.tgz`;
}

/** Fetches `spec` with `npm pack` into the cache folder, unless a copy with `integrity` is there; returns its path. */
export async function fetchTarball(spec, integrity) {
  // Shared by every clone: a tarball is only ever taken when its integrity matches.
  const cacheDir = cacheFolder('tarballs', path.join(conformanceRoot, 'cache'));
  const file = path.join(cacheDir, tarballName(spec));
  if (existsSync(file) && (await sha512File(file)) === integrity) return file;
  const staging = mkdtempSync(path.join(cacheDir, 'pack-'));
  try {
    await run('npm', ['pack', spec, '--pack-destination', staging, '--silent'], { cwd: staging, maxBuffer: 16 << 20 });
    const packed = path.join(staging, tarballName(spec));
    const actual = await sha512File(packed);
    if (actual !== integrity) throw new Error(`${spec}: integrity ${actual}, expected ${integrity} (eras.mjs)`);
    renameSync(packed, file);
    return file;
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/** The names and contents of the files under `dir` (a header folder): node_modules is unpacked anew by every
 * `npm ci`, with new times, so only the bytes say whether it changed. */
function treeStamp(dir, hash) {
  const files = readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name))
    .sort();
  for (const full of files)
    hash
      .update(`${path.relative(dir, full)}\0`)
      .update(readFileSync(full))
      .update('\0');
}

/**
 * Hashes what the objects are made from besides the tarball: the harness (this folder, the simulated Metal's headers,
 * the toolchain script whose options every compile uses), the compilers' versions and the system headers (GNUstep,
 * GCC's objc/, Node-API's). A change to any of them rebuilds every era, in the clone and in the cache.
 */
function harnessKey(tools) {
  const hash = createHash('sha256');
  for (const cmd of [tools.cc, tools.cxx]) hash.update(execFileSync(cmd, ['--version'], { encoding: 'utf8' }));
  for (const dir of [gnustepHeaders(), path.join(gccObjcHeaders(), 'objc'), ...napiIncludes().map((f) => f.slice(2))])
    treeStamp(dir, hash);
  hash.update(readFileSync(path.join(repoRoot, 'scripts', 'build', 'sim-toolchain.mjs')));
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else hash.update(`${path.relative(repoRoot, full)}\0`).update(readFileSync(full));
    }
  };
  walk(harnessInclude);
  walk(harnessSrc);
  walk(path.join(simRoot, 'include'));
  hash.update(readFileSync(fileURLToPath(import.meta.url)));
  hash.update(readFileSync(path.join(here, 'eras.mjs')));
  return hash.digest('hex');
}

/** The statements of a CMake call `name(first …)`: its arguments, comments dropped. */
function cmakeList(text, call, first) {
  const start = text.indexOf(`${call}(${first}`);
  if (start < 0) throw new Error(`${call}(${first} …) not found`);
  const end = text.indexOf(')', start);
  return text
    .slice(start + call.length + 1, end)
    .split('\n')
    .map((l) => l.replace(/#.*/, ''))
    .join(' ')
    .split(/\s+/)
    .filter((t) => t !== '' && t !== first);
}

function cmakeVar(text, name) {
  const m = new RegExp(`set\\(${name}\\s+([^)\\s]+)\\)`).exec(text);
  if (m === null) throw new Error(`set(${name} …) not found`);
  return m[1];
}

/**
 * Unpacks the tarball's llama.cpp bundle (`llama/gitRelease.bundle`, `llama/llama.cpp.info.json`) into `work` and
 * clones it bare there; returns the clone, the release tag the tarball names and the bundle's (short) commit.
 */
export async function cloneBundle(tgz, work) {
  await run('tar', ['-xzf', tgz, '-C', work, 'package/llama/gitRelease.bundle', 'package/llama/llama.cpp.info.json']);
  const info = JSON.parse(readFileSync(path.join(work, 'package/llama/llama.cpp.info.json'), 'utf8'));
  const repo = path.join(work, 'repo.git');
  await run('git', ['clone', '--quiet', '--bare', path.join(work, 'package/llama/gitRelease.bundle'), repo]);
  const { stdout: commit } = await run('git', ['-C', repo, 'rev-parse', '--short', 'HEAD']);
  return { repo, tag: info.tag, commit: commit.trim() };
}

/** Writes the clone's tree at HEAD into `dir` (created if needed): only `paths` when given, else all of it. */
export async function archiveTree(repo, dir, paths = []) {
  mkdirSync(dir, { recursive: true });
  await new Promise((resolve, reject) => {
    const archive = spawn('git', ['-C', repo, 'archive', '--format=tar', 'HEAD', ...paths], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const untar = spawn('tar', ['-x', '-C', dir], { stdio: ['pipe', 'inherit', 'inherit'] });
    archive.stdout.pipe(untar.stdin);
    let pending = 2;
    const done = (name) => (code) => {
      if (code !== 0) reject(new Error(`${name} exited with ${code}`));
      else if (--pending === 0) resolve();
    };
    archive.on('close', done('git archive'));
    untar.on('close', done('tar'));
  });
}

/** Takes the ggml sources out of the tarball's git bundle into `dir/ggml`; returns the release tag and commit. */
async function extractSources(tgz, dir) {
  const work = mkdtempSync(path.join(path.dirname(dir), 'extract-'));
  try {
    const { repo, tag, commit } = await cloneBundle(tgz, work);
    const { stdout: listing } = await run('git', ['-C', repo, 'ls-tree', 'HEAD', 'ggml/src/']);
    const topFiles = listing
      .split('\n')
      .filter((l) => l.includes(' blob '))
      .map((l) => l.split('\t')[1]);
    // ggml-cpu/ for the headers the older ggml-quants.c includes.
    const paths = ['ggml/include', 'ggml/CMakeLists.txt', 'ggml/src/ggml-metal', 'ggml/src/ggml-cpu', ...topFiles];
    await archiveTree(repo, dir, paths);
    return { tag, commit };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * What CMake's configure step gives ggml-base: ggml's version and the bundle's commit, written into ggml-version.h
 * from its template (ggml 0.2x) or passed as GGML_VERSION / GGML_COMMIT compile definitions, as ggml/CMakeLists.txt
 * does before the template (ggml 0.9 to 0.19). Returns the version (null for a ggml without ggml_version()) and the
 * definitions ggml-base is compiled with.
 */
function configure(ggml, commit) {
  const cmake = readFileSync(path.join(ggml, 'CMakeLists.txt'), 'utf8');
  const version = () => ['MAJOR', 'MINOR', 'PATCH'].map((p) => cmakeVar(cmake, `GGML_VERSION_${p}`)).join('.');
  const template = path.join(ggml, 'src', 'ggml-version.h.in');
  if (existsSync(template)) {
    const header = readFileSync(template, 'utf8')
      .replace('@GGML_VERSION@', version())
      .replace('@GGML_BUILD_COMMIT@', commit);
    writeFileSync(path.join(ggml, 'src', 'ggml-version.h'), header);
    return { version: version(), defines: [] };
  }
  if (/target_compile_definitions\(ggml-base PRIVATE\s+GGML_VERSION=/.test(cmake)) {
    const v = version();
    return { version: v, defines: [`-DGGML_VERSION=${JSON.stringify(v)}`, `-DGGML_COMMIT=${JSON.stringify(commit)}`] };
  }
  return { version: null, defines: [] };
}

/** The props fields a device era's driver can read; eras.mjs `lacks` lists those an era does not have. */
const ERA_FIELDS = ['has_tensor', 'desc', 'device_id', 'gpu_family'];

/** The driver's view of a device era, as preprocessor definitions (src/driver-device.m). */
function driverDefines(era) {
  for (const field of era.lacks) {
    if (!ERA_FIELDS.includes(field)) throw new Error(`${era.id}: unknown field ${field} in lacks (eras.mjs)`);
  }
  const has = (field) => (era.lacks.includes(field) ? 0 : 1);
  if ((era.chips === null) !== era.lacks.includes('device_id'))
    throw new Error(
      `${era.id}: chips is ${era.chips}, but device_id is ${has('device_id') ? 'read' : 'absent'} (eras.mjs)`,
    );
  if (era.tuning !== null && (era.lacks.includes('device_id') || era.lacks.includes('gpu_family')))
    throw new Error(`${era.id}: a tuning table needs device_id and gpu_family (eras.mjs)`);
  const init = { void: 0, device: 1, devices: 2 }[era.init];
  if (init === undefined) throw new Error(`${era.id}: init ${era.init} is none of void, device, devices (eras.mjs)`);
  return [
    `-DMCS_DEVICE_INIT=${init}`,
    ...ERA_FIELDS.map((field) => `-DMCS_HAS_${field.toUpperCase()}=${has(field)}`),
    `-DMCS_CHIPS=${{ table: 2, parser: 1 }[era.chips] ?? 0}`,
    `-DMCS_TUNING=${era.tuning === null ? 0 : 1}`,
  ];
}

/**
 * llama.cpp's own device_id names, for an era whose driver reaches its parser but not ggml_metal_device_id_token
 * (chips: parser): the enumerators of ggml_metal_device_id in ggml-metal-device.h, in order, as a C table written
 * to `file`. Fails unless the enum counts up from GGML_METAL_DEVICE_GENERIC = 0 without other values.
 */
function writeDeviceIdNames(header, file) {
  const m = /enum\s+ggml_metal_device_id\s*\{([^}]*)\}/.exec(readFileSync(header, 'utf8'));
  if (m === null) throw new Error(`${path.basename(header)}: enum ggml_metal_device_id not found`);
  const entries = m[1]
    .replace(/\/\/.*$/gm, '')
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  const names = entries.map((e, i) => {
    const [name, value] = e.split('=').map((x) => x.trim());
    if (!/^GGML_METAL_DEVICE_\w+$/.test(name) || (value !== undefined && !(i === 0 && value === '0')))
      throw new Error(`${path.basename(header)}: unexpected enumerator ${e} in ggml_metal_device_id`);
    return name;
  });
  if (names[0] !== 'GGML_METAL_DEVICE_GENERIC')
    throw new Error(`${path.basename(header)}: ggml_metal_device_id does not start at GGML_METAL_DEVICE_GENERIC`);
  writeFileSync(
    file,
    `/* Written by build.mjs from ggml-metal-device.h: ggml_metal_device_id's enumerators, by value. */\n` +
      `static const char *const mcs_device_id_names[] = {\n${names.map((n) => `    "${n}",\n`).join('')}};\n`,
  );
}

/**
 * The GGML_METAL_* names the era's ggml sources spell out as string literals (getenv("…"), @"…"), sorted: every
 * switch it can read is among them. The conformance test runs every combination of the switches a release reads,
 * and those it cannot read only together (conformance.test.ts `switchCases`).
 */
function namedSwitches(ggmlSrc) {
  const names = new Set();
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (/\.(c|cc|cpp|h|hpp|m|mm)$/.test(entry.name))
        for (const m of readFileSync(full, 'utf8').matchAll(/"(GGML_METAL_[A-Z0-9_]+)"/g)) names.add(m[1]);
    }
  };
  walk(ggmlSrc);
  return [...names].sort();
}

/** Applies the era's subscript rewrites to `file`, each exactly where it is found; fails when one is missing. */
export function rewriteSubscripts(text, ids, file) {
  let out = text;
  for (const id of ids) {
    const [from, to] = SUBSCRIPT_REWRITES[id];
    if (!out.includes(from))
      throw new Error(`${file}: subscript rewrite ${id} (${from}) not found: the sources changed`);
    out = out.split(from).join(to);
  }
  return out;
}

function sourcesOf(ggml, era) {
  const base = cmakeList(readFileSync(path.join(ggml, 'src', 'CMakeLists.txt'), 'utf8'), 'add_library', 'ggml-base')
    .filter((f) => /\.(c|cpp)$/.test(f))
    .map((f) => path.join(ggml, 'src', f));
  if (era.kind === 'legacy')
    return { base, metalCxx: [], deviceObjc: path.join(ggml, 'src', 'ggml-metal', 'ggml-metal.m') };
  const metal = cmakeList(
    readFileSync(path.join(ggml, 'src', 'ggml-metal', 'CMakeLists.txt'), 'utf8'),
    'ggml_add_backend_library',
    'ggml-metal',
  );
  // The device code and the C++ it calls; not the backend registration (ggml-metal.cpp) or the graph context
  // (ggml-metal-context.m). ggml-metal-tuning.cpp is compiled inside the tuning probe, which reads its table.
  const metalCxx = metal
    .filter((f) => f.endsWith('.cpp') && !['ggml-metal.cpp', 'ggml-metal-tuning.cpp'].includes(f))
    .map((f) => path.join(ggml, 'src', 'ggml-metal', f));
  return { base, metalCxx, deviceObjc: path.join(ggml, 'src', 'ggml-metal', 'ggml-metal-device.m') };
}

/**
 * The era's compiled objects, from the object cache (`cacheRoot`/<era>-<key>/, `objects.json` written last) or
 * compiled there through a private staging folder renamed into place (a concurrent build of the same key that
 * finishes first is kept). Returns the folder, the objects (paths inside it) and the era's identity.
 */
async function compiledEra(era, key, tools, queue, cacheRoot) {
  const entry = path.join(cacheRoot, `${era.id}-${key.slice(0, 12)}`);
  const made = readCompiled(entry, key);
  if (made !== null) return { ...made, compiled: false };
  const staging = mkdtempSync(path.join(cacheRoot, `.staging-${era.id}-`));
  try {
    const built = await compileEra(era, tools, queue, staging);
    writeFileSync(path.join(staging, 'objects.json'), `${JSON.stringify({ key, ...built }, null, 2)}\n`);
    try {
      renameSync(staging, entry);
    } catch (err) {
      if (err.code !== 'EEXIST' && err.code !== 'ENOTEMPTY') throw err;
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  const done = readCompiled(entry, key);
  if (done === null) throw new Error(`${entry} is incomplete after the build`);
  return { ...done, compiled: true };
}

/** compileEra's objects, named relative to `dir`, as paths. */
function absolute(dir, objects) {
  const at = (f) => path.join(dir, f);
  return {
    shared: objects.shared.map(at),
    addon: at(objects.addon),
    cli: at(objects.cli),
    arch: Object.fromEntries(Object.entries(objects.arch).map(([arch, list]) => [arch, list.map(at)])),
  };
}

/** A complete object cache entry for `key` (objects.json names every object, relative to the entry), or null. */
function readCompiled(entry, key) {
  const file = path.join(entry, 'objects.json');
  if (!existsSync(file)) return null;
  const stamp = JSON.parse(readFileSync(file, 'utf8'));
  if (stamp.key !== key) return null;
  const objects = absolute(entry, stamp.objects);
  for (const f of [...objects.shared, objects.addon, objects.cli, ...Object.values(objects.arch).flat()]) {
    if (!existsSync(f)) return null;
  }
  return { entry, identity: stamp.identity, objects };
}

/** Steps 1 to 4 for one era, in `dir`: fetch, extract, configure and compile; the objects are named relative to it. */
async function compileEra(era, tools, queue, dir) {
  const tgz = await fetchTarball(era.package, era.integrity);
  const src = path.join(dir, 'src');
  const { tag, commit } = await extractSources(tgz, src);
  if (tag !== era.id) throw new Error(`${era.package} ships llama.cpp ${tag}, eras.mjs says ${era.id}`);
  const ggml = path.join(src, 'ggml');
  const { version: ggmlVersion, defines: versionDefines } = configure(ggml, commit);
  const { base, metalCxx, deviceObjc } = sourcesOf(ggml, era);
  const eraDefines = era.kind === 'device' ? driverDefines(era) : [];
  const generated = path.join(dir, 'generated');
  mkdirSync(generated, { recursive: true });
  if (era.chips === 'parser')
    writeDeviceIdNames(
      path.join(ggml, 'src', 'ggml-metal', 'ggml-metal-device.h'),
      path.join(generated, 'mcs-device-ids.h'),
    );
  writeFileSync(
    deviceObjc,
    rewriteSubscripts(readFileSync(deviceObjc, 'utf8'), era.rewrites, path.basename(deviceObjc)),
  );

  // GCC's whole include folder would also bring its stdatomic.h, which breaks _Atomic inside blocks: only objc/.
  const objcDir = path.join(dir, 'gcc-objc');
  mkdirSync(objcDir, { recursive: true });
  symlinkSync(path.join(gccObjcHeaders(), 'objc'), path.join(objcDir, 'objc'));

  const ggmlIncludes = [
    `-I${path.join(ggml, 'include')}`,
    `-I${path.join(ggml, 'src')}`,
    `-I${path.join(ggml, 'src', 'ggml-metal')}`,
  ];
  // Third-party sources: their warnings are not ours to fix, and none is an error.
  const common = ['-O0', '-fPIC', '-w', '-g0'];
  const objcFlags = (arch) => [
    '-x',
    'objective-c',
    '-std=gnu11',
    ...objcRuntimeOptions,
    `-I${harnessInclude}`,
    `-I${path.join(simRoot, 'include')}`,
    `-I${gnustepHeaders()}`,
    `-idirafter`,
    objcDir,
    `-DMCS_TARGET_X86_64=${arch === 'x86_64' ? 1 : 0}`,
    `-DMCS_MACOS_SDK=${ARM64_SDK}`,
    `-DMCS_RELEASE=${JSON.stringify(tag)}`,
    '-include',
    path.join(harnessInclude, 'conformance-prelude.h'),
  ];
  const obj = path.join(dir, 'obj');
  mkdirSync(obj, { recursive: true });
  const compile = (source, out, flags, cxx = false) =>
    queue(() =>
      run(cxx ? tools.cxx : tools.cc, [...common, ...flags, '-c', source, '-o', out], { maxBuffer: 64 << 20 }),
    ).then(
      () => out,
      (err) => {
        throw new Error(`compiling ${path.relative(repoRoot, source)} failed:\n${err.stderr ?? err.message}`);
      },
    );
  const name = (source, suffix = '') => path.join(obj, `${path.basename(source)}${suffix}.o`);

  const shared = [
    ...base.map((s) =>
      compile(
        s,
        name(s),
        [s.endsWith('.c') ? '-std=gnu11' : '-std=gnu++17', ...ggmlIncludes, ...versionDefines],
        s.endsWith('.cpp'),
      ),
    ),
    ...metalCxx.map((s) => compile(s, name(s), ['-std=gnu++17', ...ggmlIncludes], true)),
    compile(path.join(harnessSrc, 'dispatch.m'), name('dispatch.m'), objcFlags('arm64')),
    compile(path.join(harnessSrc, 'driver.c'), name('driver.c'), ['-std=gnu11', ...ggmlIncludes]),
    compile(path.join(harnessSrc, 'link-stubs.m'), name('link-stubs.m'), objcFlags('arm64')),
    compile(path.join(harnessSrc, 'foundation.m'), name('foundation.m'), objcFlags('arm64')),
  ];
  if (era.tuning !== null) {
    const probe = path.join(harnessSrc, `tuning-${era.tuning}.cpp`);
    shared.push(compile(probe, name(probe), ['-std=gnu++17', ...ggmlIncludes, `-I${harnessSrc}`], true));
  }
  const addonObj = compile(path.join(harnessSrc, 'addon.c'), name('addon.c'), [
    '-std=gnu11',
    ...napiIncludes(),
    '-DNAPI_VERSION=8',
  ]);
  const cliObj = compile(path.join(harnessSrc, 'cli.c'), name('cli.c'), ['-std=gnu11']);
  const perArch = BUILD_ARCHES.map((arch) => {
    // The driver compiles the device source into itself (to reach its statics), once per build configuration.
    const driver = path.join(harnessSrc, era.kind === 'device' ? 'driver-device.m' : 'driver-legacy.m');
    return Promise.all([
      compile(driver, name(driver, `-${arch}`), [
        ...objcFlags(arch),
        ...ggmlIncludes,
        `-I${harnessSrc}`,
        `-I${generated}`,
        ...eraDefines,
      ]),
    ]);
  });

  const [sharedObjects, addonObject, cliObject, ...archObjects] = await Promise.all([
    Promise.all(shared),
    addonObj,
    cliObj,
    ...perArch,
  ]);
  const switches = namedSwitches(path.join(ggml, 'src'));
  // The sources are not needed once compiled: the cache keeps the objects alone.
  rmSync(src, { recursive: true, force: true });
  rmSync(generated, { recursive: true, force: true });
  rmSync(objcDir, { recursive: true, force: true });
  const rel = (f) => path.relative(dir, f);
  return {
    identity: { release: tag, commit, ggmlVersion, switches },
    objects: {
      shared: sharedObjects.map(rel),
      addon: rel(addonObject),
      cli: rel(cliObject),
      arch: Object.fromEntries(BUILD_ARCHES.map((arch, i) => [arch, archObjects[i].map(rel)])),
    },
  };
}

/**
 * One era in the clone: build/conformance/<era>-<key>/<arch>/ linked from the era's objects (the object cache's, or
 * compiled in build/conformance/<era>-<key>/ when `cacheRoot` is null). `stamp.json`, written last, holds the key and
 * the era's identity; a stamp with this key is the era built already.
 */
async function buildEra(era, key, tools, queue, cacheRoot) {
  const dir = path.join(conformanceRoot, `${era.id}-${key.slice(0, 12)}`);
  const stampFile = path.join(dir, 'stamp.json');
  const outputs = Object.fromEntries(
    BUILD_ARCHES.map((arch) => [
      arch,
      {
        lib: path.join(dir, arch, 'libggml-metal.so'),
        addon: path.join(dir, arch, 'conformance.node'),
        cli: path.join(dir, arch, 'ggml-metal-driver'),
      },
    ]),
  );
  if (existsSync(stampFile)) {
    const stamp = JSON.parse(readFileSync(stampFile, 'utf8'));
    if (stamp.key === key)
      return { era, dir, cached: true, linked: false, objects: stamp.objects, ...stamp.identity, outputs };
  }
  // Earlier builds of this era (another harness or tarball) go.
  for (const old of readdirSync(conformanceRoot)) {
    if (old.startsWith(`${era.id}-`)) rmSync(path.join(conformanceRoot, old), { recursive: true, force: true });
  }
  let made;
  if (cacheRoot === null) {
    mkdirSync(dir, { recursive: true });
    const built = await compileEra(era, tools, queue, dir);
    made = { entry: dir, identity: built.identity, objects: absolute(dir, built.objects), compiled: true };
  } else {
    made = await compiledEra(era, key, tools, queue, cacheRoot);
  }
  const tag = made.identity.release;
  const { shared: sharedObjects, addon: addonObject, cli: cliObject } = made.objects;
  const archObjects = BUILD_ARCHES.map((arch) => made.objects.arch[arch]);
  await Promise.all(
    BUILD_ARCHES.map(async (arch, i) => {
      const out = outputs[arch];
      mkdirSync(path.dirname(out.lib), { recursive: true });
      const link = (args) =>
        queue(() => run(tools.cxx, args, { maxBuffer: 64 << 20 })).catch((err) => {
          throw new Error(
            `linking ${path.relative(repoRoot, args[args.indexOf('-o') + 1])} failed:\n${err.stderr ?? err.message}`,
          );
        });
      // libBlocksRuntime before GNUstep: GNUstep's own _Block_copy does not copy stack blocks.
      await link([
        '-shared',
        '-o',
        out.lib,
        ...archObjects[i],
        ...sharedObjects,
        '-Wl,-soname,libggml-metal.so',
        '-Wl,--no-undefined',
        `-L${simLibDir}`,
        `-Wl,-rpath,${simLibDir}`,
        '-lBlocksRuntime',
        '-lMetal',
        '-lgnustep-base',
        '-lobjc',
        '-lpthread',
        '-lm',
      ]);
      // node-llama-cpp's layout: its build metadata next to libggml-metal, which the consumer scan reads.
      writeFileSync(
        path.join(path.dirname(out.lib), '_nlcBuildMetadata.json'),
        JSON.stringify({
          buildOptions: { platform: 'mac', arch, gpu: 'metal', llamaCpp: { repo: 'ggml-org/llama.cpp', release: tag } },
        }),
      );
      const own = [
        `-L${path.dirname(out.lib)}`,
        '-l:libggml-metal.so',
        '-Wl,-rpath,$ORIGIN',
        `-Wl,-rpath,${simLibDir}`,
      ];
      // The program puts libBlocksRuntime among its own dependencies: under `exec` the preloaded injector brings
      // GNUstep, which would otherwise come first in the global search order with its own _Block_copy.
      const blocksFirst = ['-Wl,--no-as-needed', '-lBlocksRuntime', '-Wl,--as-needed'];
      await Promise.all([
        link(['-shared', '-o', out.addon, addonObject, ...own]),
        link(['-o', out.cli, cliObject, ...blocksFirst, ...own]),
      ]);
    }),
  );
  writeFileSync(stampFile, `${JSON.stringify({ key, identity: made.identity, objects: made.entry }, null, 2)}\n`);
  return { era, dir, cached: !made.compiled, linked: true, objects: made.entry, ...made.identity, outputs };
}

/**
 * The era's @node-llama-cpp/mac-arm64-metal binaries (Mach-O), fetched like the sources and unpacked once into
 * build/conformance/binaries-<era>-<key>/; returns the folder holding them (libggml-metal.so, …), or null when npm has
 * no binaries for that release.
 */
export async function fetchBinaries(era) {
  if (era.binaries === null) return null;
  const key = createHash('sha256').update(era.binaries.integrity).digest('hex').slice(0, 12);
  const dir = path.join(conformanceRoot, `binaries-${era.id}-${key}`);
  const bins = path.join(dir, 'package', 'bins', 'mac-arm64-metal');
  if (existsSync(path.join(dir, 'stamp'))) return bins;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const tgz = await fetchTarball(era.binaries.package, era.binaries.integrity);
  await run('tar', ['-xzf', tgz, '-C', dir, 'package/bins']);
  writeFileSync(path.join(dir, 'stamp'), `${era.binaries.integrity}\n`);
  return bins;
}

/** The launcher (src/launcher.c) that runs several eras' drivers under one `exec`; built once, returns its path. */
export async function buildLauncher() {
  const source = path.join(harnessSrc, 'launcher.c');
  const out = path.join(conformanceRoot, 'launcher');
  if (existsSync(out) && statSync(out).mtimeMs > statSync(source).mtimeMs) return out;
  mkdirSync(conformanceRoot, { recursive: true });
  await run(toolchain().cc, ['-O1', '-std=gnu11', '-Wall', '-Werror', source, '-o', out]);
  return out;
}

/** Builds every era (or those given) and returns, per era, its identity and the outputs of each build arch. */
export async function buildConformance({ eras = ERAS, cache = true } = {}) {
  if (process.platform !== 'linux')
    throw new Error('the conformance build is Linux-only (it builds against the simulated Metal)');
  if (!existsSync(path.join(simLibDir, 'libMetal.so'))) throw new Error('run `npm run build:sim` first');
  const tools = toolchain();
  const key = harnessKey(tools);
  const queue = pool(Math.max(1, availableParallelism()));
  mkdirSync(conformanceRoot, { recursive: true });
  // The in-clone build, when asked or when the cache cannot be used: the objects next to the links.
  const cacheRoot = cache ? cacheFolder('conformance', null) : null;
  return Promise.all(
    eras.map((era) =>
      buildEra(era, createHash('sha256').update(`${era.integrity}\0${key}`).digest('hex'), tools, queue, cacheRoot),
    ),
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const started = Date.now();
  buildConformance({ cache: !process.argv.includes('--no-cache') })
    .then((built) => {
      for (const b of built) {
        const how = !b.linked ? 'up to date' : b.cached ? `linked from ${b.objects}` : 'built';
        console.log(
          `${how}  ${b.era.id} (${b.era.package}, ggml ${b.ggmlVersion ?? 'without ggml_version'})  ${path.relative(repoRoot, b.dir)}`,
        );
      }
      console.log(`${((Date.now() - started) / 1000).toFixed(1)} s`);
    })
    .catch((err) => {
      process.stderr.write(`conformance build failed: ${err.message}\n`);
      process.exit(1);
    });
}
