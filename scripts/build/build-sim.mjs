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
// Before anything compiles, the toolchain is checked (scripts/build/sim-toolchain.mjs): what is missing is one line
// naming the Debian packages and the apt-get command, and exit 1. Then every compile and link still to do is counted,
// and each is reported as it runs (scripts/build/progress.mjs): one line per step in CI or a log, one line rewritten
// in place on a terminal. As many compiles run at once as the machine has CPUs.
//
// node-gyp is not used here: gyp's make generator silently drops .mm sources on Linux.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  buildRoot,
  compiler,
  hookEngine,
  inNative,
  linkSim,
  missingLine,
  missingRequirements,
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
import { createProgress, inPlace } from './progress.mjs';

const run = promisify(execFile);
const force = process.argv.includes('--force');
const sanitize = process.argv.includes('--sanitize');
// Set by main() once the toolchain is known to be there (each of them asks it).
let cxx;
let napiIncludes;
let common;
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
function planCompile(source, objDir, extra, dialect, targetName) {
  const object = path.join(objDir, `${path.basename(source, path.extname(source))}.o`);
  const own = !path.relative(nativeDir, source).startsWith('..') ? (dialect?.flags ?? []) : [];
  const argv = [...common, ...extra, ...own, '-c', source, '-o', object];
  recorded[targetName] ??= {};
  recorded[targetName][path.relative(repoRoot, source)] = argv;
  const needed = !(upToDate(object, [source]) && sameFlags(`${object}.flags`, argv));
  return { name: `${path.relative(repoRoot, source)} (${targetName})`, object, argv, needed };
}

/** What a target needs done: its compiles (each `needed` or not) and its link, relinked when an object is rebuilt. */
function plan(name, output, sources, { cflags = [], ldflags = [], shared = true, dialect = null } = {}) {
  const objDir = path.join(buildRoot, 'obj', name);
  const compiles = sources.map((s) => planCompile(s, objDir, cflags, dialect, name));
  const objects = compiles.map((c) => c.object);
  const linkNeeded = compiles.some((c) => c.needed) || !upToDate(output, objects);
  const argv = [...(shared ? ['-shared'] : []), '-o', output, ...objects, ...ldflags];
  return { output, compiles, link: { name: path.relative(repoRoot, output), argv, needed: linkNeeded } };
}

/** Runs at most `n` of the functions given to it at once, in the order they came. */
function limiter(n) {
  let active = 0;
  const waiting = [];
  return async (fn) => {
    if (active < n) active++;
    else await new Promise((resume) => waiting.push(resume));
    try {
      return await fn();
    } finally {
      // The slot goes straight to the next in line, so no newcomer can take it in between.
      const next = waiting.shift();
      if (next) next();
      else active--;
    }
  };
}

let progress = null;

async function step(name, doing, done, work) {
  progress.start(name, doing);
  await work();
  progress.done(name, done);
}

async function build(target, slot) {
  await Promise.all(
    target.compiles
      .filter((c) => c.needed)
      .map((c) =>
        slot(() =>
          step(c.name, 'compiling', 'compiled', async () => {
            mkdirSync(path.dirname(c.object), { recursive: true });
            await run(cxx, c.argv, { maxBuffer: 16 << 20 });
            writeFileSync(`${c.object}.flags`, JSON.stringify(c.argv));
          }),
        ),
      ),
  );
  if (!target.link.needed) return;
  await slot(() =>
    step(target.link.name, 'linking', 'linked', async () => {
      mkdirSync(path.dirname(target.output), { recursive: true });
      await run(cxx, target.link.argv, { maxBuffer: 16 << 20 });
    }),
  );
}

/**
 * Builds the planned targets, stage after stage (a stage's links may need what an earlier stage linked), the targets
 * of one stage side by side; says how many steps there are, each as it runs, and what each target's output is now.
 */
async function runStages(label, stages) {
  const targets = stages.flat();
  const total = targets.reduce((n, t) => n + t.compiles.filter((c) => c.needed).length + (t.link.needed ? 1 : 0), 0);
  const jobs = availableParallelism();
  const started = performance.now();
  if (total > 0) {
    console.log(`${label}: ${total} steps with ${cxx}, ${jobs} at a time`);
    progress = createProgress({
      total,
      write: (text) => process.stdout.write(text),
      tty: inPlace(),
      columns: process.stdout.columns,
    });
    const slot = limiter(jobs);
    for (const stage of stages) await Promise.all(stage.map((t) => build(t, slot)));
    progress.end();
  }
  for (const t of targets) console.log(`${t.link.needed ? 'built' : 'up to date'}  ${t.link.name}`);
  if (total > 0) console.log(`${label}: done in ${((performance.now() - started) / 1000).toFixed(1)}s`);
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
  // Written only when it changed: the suite reads it while a no-op build runs beside it (test/repo/build-sim.test.ts).
  const text = `${JSON.stringify(record, null, 2)}\n`;
  if (!existsSync(flagsRecord) || readFileSync(flagsRecord, 'utf8') !== text) writeFileSync(flagsRecord, text);
}

// The engine without Node, under sanitizers: test/native/engine_stress.mm (see there).
function sanitizedStages() {
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
  const doctor = plan(
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
  const injectExit = plan(
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
  const stress = Object.entries(variants).map(([name, flags]) =>
    plan(`stress-${name}`, path.join(buildRoot, 'sanitize', `engine_stress-${name}`), sources, {
      cflags: ['-O1', ...flags],
      ldflags: [...flags, ...linkSim, `-Wl,-rpath,${simLibDir}`],
      shared: false,
      dialect: dialects.addon,
    }),
  );
  // Nothing links against another here: one stage.
  return [[doctor, injectExit, ...stress]];
}

/** The test build's targets, in stages: the simulated Metal first, which the addon and the fixture link against. */
function stages() {
  const metal = plan(
    'sim-metal',
    simLibPath,
    ['SimMetal.mm', 'SimCompute.mm'].map((f) => path.join(simRoot, 'src', f)),
    {
      cflags: [`-DMCS_SIM_SNAPSHOT_DIR="${path.join(repoRoot, 'snapshots')}"`],
      ldflags: ['-Wl,-soname,libMetal.so', '-lBlocksRuntime', '-lgnustep-base', '-lobjc', '-lpthread'],
    },
  );
  const originRpath = (to) => `-Wl,-rpath,$ORIGIN/${to}`;
  const addon = plan(
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
  );
  const inject = plan(
    'inject',
    path.join(buildRoot, 'Release', 'libmetal_cap_shim_inject.so'),
    [...inNative('inject/inject.mm'), ...hookEngine],
    {
      cflags: ['-fvisibility=hidden'],
      dialect: dialects.inject,
      // Not linked to the simulated Metal: the program brings it, and RTLD_NEXT finds its definitions.
      ldflags: ['-lBlocksRuntime', '-lgnustep-base', '-lobjc', '-lpthread', '-ldl'],
    },
  );
  const testAddon = {
    cflags: [...napiIncludes, '-DNAPI_VERSION=8', '-fvisibility=hidden'],
    ldflags: [...linkSim, originRpath('../sim-metal/lib')],
  };
  const fixture = plan(
    'fixture',
    path.join(buildRoot, 'test', 'sim_fixture.node'),
    [path.join(repoRoot, 'test', 'native', 'sim_fixture.mm')],
    testAddon,
  );
  const control = plan(
    'control',
    path.join(buildRoot, 'test', 'sim_control.node'),
    [path.join(simRoot, 'src', 'SimControl.mm')],
    testAddon,
  );
  return [[metal], [addon, inject, fixture, control]];
}

/** Whether node-addon-api's and node-api-headers' headers can be found (npm ci installs them). */
function napiHeadersInstalled() {
  try {
    napiIncludesOf();
    return true;
  } catch {
    return false;
  }
}

async function main() {
  if (process.platform !== 'linux') {
    throw new Error('build:sim is the Linux test build; on macOS the addon builds with node-gyp (npm install)');
  }
  const label = sanitize ? 'build:sim --sanitize' : 'build:sim';
  const missing = missingRequirements({ sanitize });
  if (missing.length > 0) {
    process.stderr.write(`${missingLine(missing, label)}\n`);
    process.exitCode = 1;
    return;
  }
  if (!napiHeadersInstalled()) {
    process.stderr.write(`${label}: node-addon-api is not installed; run \`npm ci\` first\n`);
    process.exitCode = 1;
    return;
  }
  cxx = compiler();
  napiIncludes = napiIncludesOf();
  common = [...simCompileFlags(), '-O2'];
  if (sanitize) {
    if (!existsSync(simLibPath)) throw new Error('run `npm run build:sim` first');
    await runStages(label, sanitizedStages());
    return writeFlagsRecord();
  }
  await runStages(label, stages());
  writeFlagsRecord();
}

main().catch((err) => {
  progress?.end();
  const detail = err.stderr ? `\n${err.stderr}` : '';
  process.stderr.write(`build:sim failed: ${err.message.split('\n')[0]}${detail}\n`);
  process.exit(1);
});
