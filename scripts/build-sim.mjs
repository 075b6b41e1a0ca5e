#!/usr/bin/env node
// The Linux test build (opt-in: `npm run build:sim`). Compiles the same src-native sources that ship for macOS,
// against test/sim-metal instead of Metal.framework, plus the simulated library and the test fixtures:
//
//   build/sim-metal/lib/libMetal.so          the simulated Metal library
//   build/Release/metal_cap_shim.node        the addon (node-gyp-build finds it here)
//   build/Release/libmetal_cap_shim_inject.so  the exec injector, loaded with LD_PRELOAD
//   build/test/sim_fixture.node              a separately compiled Metal consumer used by the tests
//   build/sanitize/engine_stress-{asan,tsan}  with --sanitize: the engine under sanitizers, without Node
//   build/sanitize/doctor_run-asan           with --sanitize: the doctor under ASan + UBSan, without Node
//
// node-gyp is not used here: gyp's make generator silently drops .mm sources on Linux.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
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
  repoRoot,
  simCompileFlags,
  simLibDir,
  simLibPath,
  simRoot,
} from './sim-toolchain.mjs';

const run = promisify(execFile);
const cxx = compiler();
const force = process.argv.includes('--force');

const napiIncludes = napiIncludesOf();
const common = [...simCompileFlags(), '-O2'];
// The shipped sources only (binding.gyp sets the same for macOS): exit() runs static destructors while other threads
// may still query a hooked device, so every global the engine touches must be immortal or trivially destructible.
// glibc's std::mutex is trivially destructible either way; test/static-destructors.test.ts checks against libc++'s.
const engineOnly = ['-Werror=exit-time-destructors'];

function newestHeader(dir) {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.h'))
    .reduce((t, f) => Math.max(t, statSync(path.join(dir, f)).mtimeMs), 0);
}
const headerTime = Math.max(
  newestHeader(nativeDir),
  newestHeader(path.join(simRoot, 'include', 'Metal')),
  newestHeader(path.join(simRoot, 'include', 'MetalSim')),
  newestHeader(path.join(simRoot, 'src')),
);

function upToDate(output, inputs) {
  if (force || !existsSync(output)) return false;
  const built = statSync(output).mtimeMs;
  return inputs.every((i) => statSync(i).mtimeMs < built) && headerTime < built;
}

async function compile(source, objDir, extra) {
  const object = path.join(objDir, `${path.basename(source, path.extname(source))}.o`);
  if (upToDate(object, [source])) return object;
  mkdirSync(objDir, { recursive: true });
  const own = path.dirname(source) === nativeDir ? engineOnly : [];
  await run(cxx, [...common, ...own, ...extra, '-c', source, '-o', object], { maxBuffer: 16 << 20 });
  return object;
}

async function link(output, objects, flags, shared) {
  if (upToDate(output, objects)) return false;
  mkdirSync(path.dirname(output), { recursive: true });
  await run(cxx, [...(shared ? ['-shared'] : []), '-o', output, ...objects, ...flags], { maxBuffer: 16 << 20 });
  return true;
}

async function target(name, output, sources, { cflags = [], ldflags = [], shared = true } = {}) {
  const objDir = path.join(buildRoot, 'obj', name);
  const objects = await Promise.all(sources.map((s) => compile(s, objDir, cflags)));
  const linked = await link(output, objects, ldflags, shared);
  console.log(`${linked ? 'built' : 'up to date'}  ${path.relative(repoRoot, output)}`);
}

// The engine without Node, under sanitizers: test/native/engine_stress.mm (see there).
async function sanitized() {
  const sources = [path.join(repoRoot, 'test', 'native', 'engine_stress.mm'), ...inNative('capabilities.mm'), ...hookEngine];
  const variants = {
    asan: ['-fsanitize=address,undefined', '-fno-sanitize-recover=undefined', '-fno-omit-frame-pointer'],
    tsan: ['-fsanitize=thread'],
  };
  // The doctor under ASan + UBSan only: it runs on one thread.
  await target('doctor-asan', path.join(buildRoot, 'sanitize', 'doctor_run-asan'), [
    path.join(repoRoot, 'test', 'native', 'doctor_run.mm'),
    ...inNative('capabilities.mm', 'host_sim.mm', 'doctor.mm', 'doctor_gpu.mm', 'doctor_heap.mm', 'doctor_nocopy.mm', 'doctor_probes.mm'),
  ], {
    cflags: ['-O1', ...variants.asan],
    ldflags: [...variants.asan, ...linkSim, `-Wl,-rpath,${simLibDir}`],
    shared: false,
  });
  for (const [name, flags] of Object.entries(variants)) {
    await target(`stress-${name}`, path.join(buildRoot, 'sanitize', `engine_stress-${name}`), sources, {
      cflags: ['-O1', ...flags],
      ldflags: [...flags, ...linkSim, `-Wl,-rpath,${simLibDir}`],
      shared: false,
    });
  }
}

async function main() {
  if (process.platform !== 'linux') {
    throw new Error('build:sim is the Linux test build; on macOS the addon builds with node-gyp (npm install)');
  }
  if (process.argv.includes('--sanitize')) {
    if (!existsSync(simLibPath)) throw new Error('run `npm run build:sim` first');
    return sanitized();
  }
  await target('sim-metal', simLibPath, ['SimMetal.mm', 'SimCompute.mm'].map((f) => path.join(simRoot, 'src', f)), {
    cflags: [`-DMCS_SIM_SNAPSHOT_DIR="${path.join(repoRoot, 'snapshots')}"`],
    ldflags: ['-Wl,-soname,libMetal.so', '-lgnustep-base', '-lobjc', '-lpthread'],
  });
  const originRpath = (to) => `-Wl,-rpath,$ORIGIN/${to}`;
  await Promise.all([
    target('addon', path.join(buildRoot, 'Release', 'metal_cap_shim.node'), [
      ...inNative('addon.mm', 'capabilities.mm', 'consumers.mm', 'host_sim.mm', 'terminal.mm'),
      ...inNative('addon_doctor.mm', 'doctor.mm', 'doctor_gpu.mm', 'doctor_heap.mm', 'doctor_nocopy.mm', 'doctor_probes.mm'),
      ...hookEngine,
    ], {
      cflags: [...napiIncludes, '-DNAPI_VERSION=8', '-fvisibility=hidden'],
      ldflags: [...linkSim, originRpath('../sim-metal/lib')],
    }),
    target('inject', path.join(buildRoot, 'Release', 'libmetal_cap_shim_inject.so'), [
      ...inNative('inject.mm'),
      ...hookEngine,
    ], {
      cflags: ['-fvisibility=hidden'],
      // Not linked to the simulated Metal: the program brings it, and RTLD_NEXT finds its definitions.
      ldflags: ['-lgnustep-base', '-lobjc', '-lpthread', '-ldl'],
    }),
  ]);
  await target('fixture', path.join(buildRoot, 'test', 'sim_fixture.node'), [
    path.join(repoRoot, 'test', 'native', 'sim_fixture.mm'),
  ], {
    cflags: [...napiIncludes, '-DNAPI_VERSION=8', '-fvisibility=hidden'],
    ldflags: [...linkSim, originRpath('../sim-metal/lib')],
  });
}

main().catch((err) => {
  const detail = err.stderr ? `\n${err.stderr}` : '';
  process.stderr.write(`build:sim failed: ${err.message.split('\n')[0]}${detail}\n`);
  process.exit(1);
});
