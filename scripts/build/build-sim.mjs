#!/usr/bin/env node
// The Linux test build (opt-in: `npm run build:sim`). Compiles the same src-native sources that ship for macOS,
// against test/sim-metal instead of Metal.framework, plus the simulated library and the test fixtures:
//
//   build/sim-metal/lib/libMetal.so          the simulated Metal library
//   build/Release/metal_cap_shim.node        the addon (node-gyp-build finds it here)
//   build/Release/libmetal_cap_shim_inject.so  the exec injector, loaded with LD_PRELOAD
//   build/test/sim_fixture.node              a separately compiled Metal consumer used by the tests
//   build/test/sim_control.node              the tests' control of the simulation: loads another snapshot
//   build/sanitize/engine_stress-{asan,tsan}  with --sanitize: the engine under sanitizers, without Node
//   build/sanitize/inject_exit-tsan           with --sanitize: the injector's trace at exit, under ThreadSanitizer
//   build/sanitize/doctor_run-asan           with --sanitize: the doctor under ASan + UBSan, without Node
//
// node-gyp is not used here: gyp's make generator silently drops .mm sources on Linux.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  buildRoot,
  compiler,
  hookEngine,
  inNative,
  linkSim,
  napiIncludes as napiIncludesOf,
  nativeDir,
  nativeFiles,
  repoRoot,
  simCompileFlags,
  simLibDir,
  simLibPath,
  simRoot,
} from './sim-toolchain.mjs';
import { macDialect } from './mac-dialect.mjs';

const run = promisify(execFile);
const cxx = compiler();
const force = process.argv.includes('--force');

const napiIncludes = napiIncludesOf();
const common = [...simCompileFlags(), '-O2'];
// The shipped sources compile in the C++ dialect node-gyp gives them on a Mac (scripts/build/mac-dialect.mjs: Node's
// common.gypi and binding.gyp's xcode_settings, so -fno-exceptions, -fno-rtti, -fno-strict-aliasing and each
// target's own switches such as -Werror=exit-time-destructors). Test code (the simulated Metal, fixtures, harnesses)
// keeps the flags above. Every compile line is recorded in build/sim-flags.json (test/native/mac-dialect.test.ts reads
// it).
const dialects = { addon: macDialect('metal_cap_shim'), inject: macDialect('metal_cap_shim_inject') };
const flagsRecord = path.join(buildRoot, 'sim-flags.json');
const recorded = {};

function newestHeader(dir) {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.h'))
    .reduce((t, f) => Math.max(t, statSync(path.join(dir, f)).mtimeMs), 0);
}
const headerTime = Math.max(
  ...nativeFiles('.h').map((f) => statSync(path.join(nativeDir, f)).mtimeMs),
  newestHeader(path.join(simRoot, 'include', 'Metal')),
  newestHeader(path.join(simRoot, 'include', 'MetalSim')),
  newestHeader(path.join(simRoot, 'src')),
);

function upToDate(output, inputs) {
  if (force || !existsSync(output)) return false;
  const built = statSync(output).mtimeMs;
  return inputs.every((i) => statSync(i).mtimeMs < built) && headerTime < built;
}

function sameFlags(file, argv) {
  try {
    return readFileSync(file, 'utf8') === JSON.stringify(argv);
  } catch {
    return false;
  }
}

// An object is rebuilt when its source, a header or its compile line changed (the line is kept beside it).
async function compile(source, objDir, extra, dialect, targetName) {
  const object = path.join(objDir, `${path.basename(source, path.extname(source))}.o`);
  const own = !path.relative(nativeDir, source).startsWith('..') ? (dialect?.flags ?? []) : [];
  const argv = [...common, ...extra, ...own, '-c', source, '-o', object];
  recorded[targetName] ??= {};
  recorded[targetName][path.relative(repoRoot, source)] = argv;
  if (upToDate(object, [source]) && sameFlags(`${object}.flags`, argv)) return object;
  mkdirSync(objDir, { recursive: true });
  await run(cxx, argv, { maxBuffer: 16 << 20 });
  writeFileSync(`${object}.flags`, JSON.stringify(argv));
  return object;
}

// The record of what this build used, merged with what an earlier run (the sanitizer builds) recorded.
function writeFlagsRecord() {
  let before = { targets: {} };
  try {
    before = JSON.parse(readFileSync(flagsRecord, 'utf8'));
  } catch {
    // first build
  }
  const dialectOf = (d) => ({ target: d.target, flags: d.flags, gnuRuntime: d.gnuRuntime, skipped: d.skipped });
  const record = {
    commonGypi: dialects.addon.commonGypi,
    bindingGyp: path.relative(repoRoot, dialects.addon.bindingGyp),
    dialects: { addon: dialectOf(dialects.addon), inject: dialectOf(dialects.inject) },
    targets: { ...before.targets, ...recorded },
  };
  writeFileSync(flagsRecord, `${JSON.stringify(record, null, 2)}\n`);
}

async function link(output, objects, flags, shared) {
  if (upToDate(output, objects)) return false;
  mkdirSync(path.dirname(output), { recursive: true });
  await run(cxx, [...(shared ? ['-shared'] : []), '-o', output, ...objects, ...flags], { maxBuffer: 16 << 20 });
  return true;
}

async function target(name, output, sources, { cflags = [], ldflags = [], shared = true, dialect = null } = {}) {
  const objDir = path.join(buildRoot, 'obj', name);
  const objects = await Promise.all(sources.map((s) => compile(s, objDir, cflags, dialect, name)));
  const linked = await link(output, objects, ldflags, shared);
  console.log(`${linked ? 'built' : 'up to date'}  ${path.relative(repoRoot, output)}`);
}

// The engine without Node, under sanitizers: test/native/engine_stress.mm (see there).
async function sanitized() {
  const sources = [
    path.join(repoRoot, 'test', 'native', 'engine_stress.mm'),
    ...inNative('engine/capabilities.mm'),
    ...hookEngine,
  ];
  const variants = {
    asan: ['-fsanitize=address,undefined', '-fno-sanitize-recover=undefined', '-fno-omit-frame-pointer'],
    tsan: ['-fsanitize=thread'],
  };
  // The doctor under ASan + UBSan only: it runs on one thread.
  await target(
    'doctor-asan',
    path.join(buildRoot, 'sanitize', 'doctor_run-asan'),
    [
      path.join(repoRoot, 'test', 'native', 'doctor_run.mm'),
      ...inNative(
        'engine/capabilities.mm',
        'platform/host_sim.mm',
        'doctor/doctor.mm',
        'doctor/doctor_gpu.mm',
        'doctor/doctor_heap.mm',
        'doctor/doctor_nocopy.mm',
        'doctor/doctor_probes.mm',
      ),
    ],
    {
      cflags: ['-O1', ...variants.asan],
      ldflags: [...variants.asan, ...linkSim, `-Wl,-rpath,${simLibDir}`],
      shared: false,
      dialect: dialects.addon,
    },
  );
  // The injector's trace at exit while another thread patches, under ThreadSanitizer (test/native/inject_exit.mm).
  await target(
    'inject-exit-tsan',
    path.join(buildRoot, 'sanitize', 'inject_exit-tsan'),
    [path.join(repoRoot, 'test', 'native', 'inject_exit.mm'), ...inNative('inject/inject.mm'), ...hookEngine],
    {
      cflags: ['-O1', ...variants.tsan],
      ldflags: [...variants.tsan, ...linkSim, '-ldl', `-Wl,-rpath,${simLibDir}`],
      shared: false,
      dialect: dialects.inject,
    },
  );
  for (const [name, flags] of Object.entries(variants)) {
    await target(`stress-${name}`, path.join(buildRoot, 'sanitize', `engine_stress-${name}`), sources, {
      cflags: ['-O1', ...flags],
      ldflags: [...flags, ...linkSim, `-Wl,-rpath,${simLibDir}`],
      shared: false,
      dialect: dialects.addon,
    });
  }
}

async function main() {
  if (process.platform !== 'linux') {
    throw new Error('build:sim is the Linux test build; on macOS the addon builds with node-gyp (npm install)');
  }
  if (process.argv.includes('--sanitize')) {
    if (!existsSync(simLibPath)) throw new Error('run `npm run build:sim` first');
    await sanitized();
    return writeFlagsRecord();
  }
  await target(
    'sim-metal',
    simLibPath,
    ['SimMetal.mm', 'SimCompute.mm'].map((f) => path.join(simRoot, 'src', f)),
    {
      cflags: [`-DMCS_SIM_SNAPSHOT_DIR="${path.join(repoRoot, 'snapshots')}"`],
      ldflags: ['-Wl,-soname,libMetal.so', '-lBlocksRuntime', '-lgnustep-base', '-lobjc', '-lpthread'],
    },
  );
  const originRpath = (to) => `-Wl,-rpath,$ORIGIN/${to}`;
  await Promise.all([
    target(
      'addon',
      path.join(buildRoot, 'Release', 'metal_cap_shim.node'),
      [
        ...inNative(
          'addon/addon.mm',
          'engine/capabilities.mm',
          'addon/consumers.mm',
          'platform/host_sim.mm',
          'platform/terminal.mm',
        ),
        ...inNative(
          'addon/addon_doctor.mm',
          'doctor/doctor.mm',
          'doctor/doctor_gpu.mm',
          'doctor/doctor_heap.mm',
          'doctor/doctor_nocopy.mm',
          'doctor/doctor_probes.mm',
        ),
        ...hookEngine,
      ],
      {
        cflags: [...napiIncludes, '-DNAPI_VERSION=8', '-fvisibility=hidden'],
        ldflags: [...linkSim, originRpath('../sim-metal/lib')],
        dialect: dialects.addon,
      },
    ),
    target(
      'inject',
      path.join(buildRoot, 'Release', 'libmetal_cap_shim_inject.so'),
      [...inNative('inject/inject.mm'), ...hookEngine],
      {
        cflags: ['-fvisibility=hidden'],
        dialect: dialects.inject,
        // Not linked to the simulated Metal: the program brings it, and RTLD_NEXT finds its definitions.
        ldflags: ['-lBlocksRuntime', '-lgnustep-base', '-lobjc', '-lpthread', '-ldl'],
      },
    ),
  ]);
  const testAddon = {
    cflags: [...napiIncludes, '-DNAPI_VERSION=8', '-fvisibility=hidden'],
    ldflags: [...linkSim, originRpath('../sim-metal/lib')],
  };
  await Promise.all([
    target(
      'fixture',
      path.join(buildRoot, 'test', 'sim_fixture.node'),
      [path.join(repoRoot, 'test', 'native', 'sim_fixture.mm')],
      testAddon,
    ),
    target(
      'control',
      path.join(buildRoot, 'test', 'sim_control.node'),
      [path.join(simRoot, 'src', 'SimControl.mm')],
      testAddon,
    ),
  ]);
  writeFlagsRecord();
}

main().catch((err) => {
  const detail = err.stderr ? `\n${err.stderr}` : '';
  process.stderr.write(`build:sim failed: ${err.message.split('\n')[0]}${detail}\n`);
  process.exit(1);
});
