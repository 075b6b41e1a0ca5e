#!/usr/bin/env node
// `npm run test:native-coverage`: line coverage of src-native/ under the simulated build, then a bounded libFuzzer
// run of the native profile parser and of the simulated snapshot loader. Linux only (the simulated build).
//
//   1. Builds the addon, the exec injector and test/native/engine_stress.mm with clang-14
//      `-fprofile-instr-generate -fcoverage-mapping` against the simulated Metal.
//   2. Runs the test files that reach the native code (nativeTestFiles(); the whole unit suite with --whole-suite) with
//      those builds (in a copy of the worktree under build/native-coverage/pkg, so the normal build/Release is never
//      swapped out), and engine_stress over two snapshots. Counters are written in LLVM's continuous mode (%c), so
//      processes the tests end with a signal still count.
//   3. Reports line coverage per file with llvm-cov-14 (HTML in build/native-coverage/html) and checks the portable
//      engine (swizzle, profile, patch) against --min-engine and all of it against --min-all.
//   4. Fuzzes test/fuzz/*_fuzz.mm for FUZZ_SECONDS each (default 30), after replaying the committed regression
//      inputs (test/fuzz/regressions/<target>/). A crash fails the script and leaves its input in
//      build/native-coverage/fuzz/<target>/.
//
// Options: --whole-suite (every file of the unit project, not nativeTestFiles()), --skip-suite (engine_stress only),
// --skip-fuzz, --fuzz-only, --min-engine N (default 95), --min-all N (all of src-native/ built here; default 90),
// --node-major N (the suite runs on that Node, one of scripts/build/node-versions.mjs's NODE_MAJORS, with the files
// rerun there added: .ci/run gives this run one of the majors, so the package checks need not rerun the files on it).
// Environment: FUZZ_SECONDS.
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
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
} from '../build/sim-toolchain.mjs';
import { macDialect } from '../build/mac-dialect.mjs';
import { staleReason } from '../build/source-stamp.mjs';
import { majorsOption, NODE_MAJORS_FILES, nodeBinary } from '../build/node-versions.mjs';

const args = process.argv.slice(2);
const has = (flag) => args.includes(flag);
const optionValue = (flag, fallback) => {
  const i = args.indexOf(flag);
  return i >= 0 && i + 1 < args.length ? Number(args[i + 1]) : fallback;
};
const minEngine = optionValue('--min-engine', 95);
const minAll = optionValue('--min-all', 90);
const fuzzSeconds = Number(process.env.FUZZ_SECONDS ?? 30);
/** The Node major the suite runs on (--node-major), or null for the Node running this script. */
const nodeMajor = (() => {
  try {
    const majors = majorsOption(args, '--node-major', []);
    if (majors.length > 1) throw new Error(`--node-major ${majors.join(',')}: name one major`);
    if (majors.length > 0 && (has('--skip-suite') || has('--fuzz-only')))
      throw new Error(
        '--node-major chooses the Node the suite runs on, and --skip-suite or --fuzz-only runs none: drop one',
      );
    return majors[0] ?? null;
  } catch (err) {
    process.stderr.write(`native-coverage: ${err.message}\n`);
    process.exit(2);
  }
})();

const out = path.join(repoRoot, 'build', 'native-coverage');
const pkg = path.join(out, 'pkg');
const rawDir = path.join(out, 'raw');
const binDir = path.join(out, 'bin');
const fuzzDir = path.join(repoRoot, 'test', 'fuzz');
const cxx = compiler();
const llvmTool = (name) => {
  for (const candidate of [`${name}-14`, name]) {
    if (spawnSync('sh', ['-c', `command -v ${candidate}`]).status === 0) return candidate;
  }
  throw new Error(`${name}-14 not found: apt-get install llvm-14`);
};

const say = (s) => process.stdout.write(`native-coverage: ${s}\n`);
const napiIncludes = napiIncludesOf();
const base = simCompileFlags();
// The addon and the injector are src-native/ alone: they compile in the Mac dialect, as build-sim.mjs builds them.
const dialect = { addon: macDialect('metal_cap_shim').flags, inject: macDialect('metal_cap_shim_inject').flags };
// -O0 keeps one counter region per source line; runtime counter relocation is what continuous mode needs on Linux.
const coverageFlags = [
  '-O0',
  '-fprofile-instr-generate',
  '-fcoverage-mapping',
  '-mllvm',
  '-runtime-counter-relocation',
];

function run(cmd, argv, options = {}) {
  const r = spawnSync(cmd, argv, { stdio: 'inherit', ...options });
  if (r.error) throw r.error;
  return r;
}

function build(output, sources, flags, ldflags, shared) {
  mkdirSync(path.dirname(output), { recursive: true });
  execFileSync(cxx, [...base, ...flags, ...(shared ? ['-shared'] : []), ...sources, '-o', output, ...ldflags], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
}

// ---- 1. instrumented builds ----

// The addon is every source of src-native/ but the injector's and the Mac-only host file, as build-sim.mjs builds it;
// listed from the folder so a new source file is never left out of the measurement.
function addonSources() {
  return nativeFiles('.mm')
    .filter((f) => !f.startsWith('inject/') && f !== 'platform/host_darwin.mm')
    .map((f) => path.join(nativeDir, f));
}

function buildInstrumented() {
  const release = path.join(pkg, 'build', 'Release');
  build(
    path.join(release, 'metal_cap_shim.node'),
    addonSources(),
    [...coverageFlags, ...napiIncludes, '-DNAPI_VERSION=8', '-fvisibility=hidden', ...dialect.addon],
    [...linkSim, '-Wl,-rpath,$ORIGIN/../sim-metal/lib'],
    true,
  );
  build(
    path.join(release, 'libmetal_cap_shim_inject.so'),
    [...inNative('inject/inject.mm'), ...hookEngine],
    [...coverageFlags, '-fvisibility=hidden', ...dialect.inject],
    ['-lBlocksRuntime', '-lgnustep-base', '-lobjc', '-lpthread', '-ldl'],
    true,
  );
  build(
    path.join(binDir, 'engine_stress'),
    [path.join(repoRoot, 'test', 'native', 'engine_stress.mm'), ...inNative('engine/capabilities.mm'), ...hookEngine],
    coverageFlags,
    [...linkSim, `-Wl,-rpath,${simLibDir}`],
    false,
  );
  return [
    path.join(release, 'metal_cap_shim.node'),
    path.join(release, 'libmetal_cap_shim_inject.so'),
    path.join(binDir, 'engine_stress'),
  ];
}

// ---- 2. the suite in a copy of the worktree ----

/**
 * The test files run against the instrumented build (unless --whole-suite): every file of the folders whose tests
 * call the addon or start programs with the injector, and the exec scenarios elsewhere (`exec*.test.ts`: the injector
 * inside real programs, under a terminal, for two users). Measured 2026-12-02 with one profile folder per test file
 * (docs/measurements.md): each of these folders covers lines no other file does, and the exec scenarios 24 lines of
 * the injector's (a second process's trace name, MTLCopyAllDevices, the controlling terminal); test/select/ (its 8
 * files together), test/e2e/commands and test/e2e/peers cover none of their own, and test/sim-metal/ loads neither
 * build. The files left out took 65 % of the suite's file time; those not named here were not measured file by
 * file. Whole folders and a name pattern, so a new test there is measured without being listed; the weekly workflow
 * runs --whole-suite, where whatever the rest adds is seen.
 */
const NATIVE_FOLDERS = Object.freeze(['device', 'doctor', 'exec', 'native', 'patch']);
const EXEC_SCENARIO = /^exec.*\.test\.ts$/;

/** The unit project's files NATIVE_FOLDERS and EXEC_SCENARIO select, relative to the repository, sorted. */
function nativeTestFiles() {
  return readdirSync(path.join(repoRoot, 'test'), { recursive: true })
    .map((f) => path.join('test', f))
    .filter((f) => {
      const [, folder, ...rest] = f.split(path.sep);
      if (rest.length === 0 || !f.endsWith('.test.ts') || ['live', 'conformance'].includes(folder)) return false;
      return NATIVE_FOLDERS.includes(folder) || EXEC_SCENARIO.test(path.basename(f));
    })
    .sort();
}

function trackedFiles() {
  const listed = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: repoRoot,
  });
  return listed
    .toString('utf8')
    .split('\0')
    .filter((f) => f !== '' && existsSync(path.join(repoRoot, f)) && statSync(path.join(repoRoot, f)).isFile());
}

function preparePackageCopy() {
  for (const f of trackedFiles()) {
    mkdirSync(path.dirname(path.join(pkg, f)), { recursive: true });
    cpSync(path.join(repoRoot, f), path.join(pkg, f));
  }
  const testAddons = ['sim_fixture.node', 'sim_control.node'].map((f) => path.join('build', 'test', f));
  // The stamp too: the global setup would otherwise rebuild dist/ in the copy, though it matches the sources.
  const stamp = path.join('build', 'dist-stamp.json');
  for (const dir of ['dist', stamp, path.join('build', 'sim-metal'), ...testAddons]) {
    cpSync(path.join(repoRoot, dir), path.join(pkg, dir), { recursive: true });
  }
  symlinkSync(path.join(repoRoot, 'node_modules'), path.join(pkg, 'node_modules'));
}

/** Runs the suite on `node` (this script's Node, or --node-major's, fetched before the builds). */
function runSuite(node) {
  // METAL_CAP_SHIM_INSTRUMENTED_BUILD: test/global-setup.ts then leaves build/ as it is (it would rebuild the normal,
  // uninstrumented addon and injector over these, and the suite would write no profile at all).
  const env = {
    ...process.env,
    LLVM_PROFILE_FILE: path.join(rawDir, 'suite-%c%m-%p.profraw'),
    METAL_CAP_SHIM_INSTRUMENTED_BUILD: '1',
  };
  // These suites examine other builds (the sanitizer binaries, the normal build's object files), never this one.
  const elsewhere = [
    'test/sanitizers/engine.test.ts',
    'test/sanitizers/doctor.test.ts',
    'test/native/static-destructors.test.ts',
    'test/native/mac-dialect.test.ts',
  ];
  const vitest = path.join(pkg, 'node_modules', 'vitest', 'vitest.mjs');
  // Each file by its path from the repository (vitest matches a filter anywhere in the path: these match themselves).
  // On another major, the files rerun there too (NODE_MAJORS_FILES): this run stands in for the package checks' rerun.
  const selected = nativeTestFiles();
  const extra = nodeMajor === null ? [] : NODE_MAJORS_FILES.filter((f) => !selected.includes(f));
  const filters = has('--whole-suite') ? [] : [...selected, ...extra];
  const { binary, version } = node;
  say(`the suite runs on Node ${version}${extra.length > 0 ? `, with ${extra.length} more files rerun there` : ''}`);
  const r = run(
    binary,
    [vitest, 'run', '--project', 'unit', ...filters, ...elsewhere.flatMap((f) => ['--exclude', f])],
    {
      cwd: pkg,
      env,
    },
  );
  // Reported after the coverage: what the suite measured is still worth seeing when a test failed.
  return r.status === 0
    ? null
    : `the unit suite failed with the instrumented build on Node ${version} (exit ${r.status})`;
}

function runStress(stress) {
  for (const snapshot of ['macbookpro16-intel-amd-two-gpus', 'vz-guest-m1-ultra-tahoe-stock']) {
    const r = run(stress, ['200'], {
      env: {
        ...process.env,
        METAL_CAP_SHIM_SIM_SNAPSHOT: snapshot,
        LLVM_PROFILE_FILE: path.join(rawDir, 'stress-%c%m-%p.profraw'),
      },
      stdio: ['ignore', 'pipe', 'inherit'],
      encoding: 'utf8',
    });
    say(`engine_stress ${snapshot}: ${r.stdout.trim()}`);
    if (r.status !== 0) throw new Error(`engine_stress failed on ${snapshot} (exit ${r.status})`);
  }
}

// ---- 3. report ----

function report(objects) {
  const profdata = path.join(out, 'merged.profdata');
  const raws = readdirSync(rawDir)
    .filter((f) => f.endsWith('.profraw'))
    .map((f) => path.join(rawDir, f));
  execFileSync(llvmTool('llvm-profdata'), ['merge', '-sparse', '-o', profdata, ...raws]);
  const objectArgs = [objects[0], ...objects.slice(1).flatMap((o) => ['-object', o])];
  const sources = nativeFiles('.mm').map((f) => path.join(nativeDir, f));
  const exported = JSON.parse(
    execFileSync(
      llvmTool('llvm-cov'),
      ['export', '-summary-only', ...objectArgs, `-instr-profile=${profdata}`, ...sources],
      {
        maxBuffer: 64 << 20,
      },
    ).toString('utf8'),
  );
  execFileSync(llvmTool('llvm-cov'), [
    'show',
    '-format=html',
    `-output-dir=${path.join(out, 'html')}`,
    '-show-line-counts-or-regions',
    ...objectArgs,
    `-instr-profile=${profdata}`,
    ...sources,
  ]);
  const rows = exported.data[0].files.map((f) => ({
    file: path.relative(repoRoot, f.filename),
    covered: f.summary.lines.covered,
    count: f.summary.lines.count,
    branches: f.summary.branches,
  }));
  const engineFiles = hookEngine.map((f) => path.relative(repoRoot, f));
  const engineRows = rows.filter((r) => engineFiles.includes(r.file));
  const sum = (list) =>
    list.reduce((a, r) => ({ covered: a.covered + r.covered, count: a.count + r.count }), { covered: 0, count: 0 });
  const pct = ({ covered, count }) => (count === 0 ? 100 : (100 * covered) / count);
  const line = (name, r) => `${name.padEnd(28)} ${pct(r).toFixed(2).padStart(6)} % of lines (${r.covered}/${r.count})`;
  const counts = new Map();
  for (const f of raws) {
    const source = path.basename(f).replace(/-.*$/, '');
    counts.set(source, (counts.get(source) ?? 0) + 1);
  }
  const bySource = [...counts].map(([source, n]) => `${source} ${n}`);
  say(
    `line coverage under the simulated build, ${raws.length} profiles (${bySource.join(', ')}; HTML: ${path.relative(repoRoot, path.join(out, 'html', 'index.html'))})`,
  );
  // A source that wrote nothing measured nothing: fail rather than report the others' coverage as the suite's.
  for (const source of has('--skip-suite') ? ['stress'] : ['suite', 'stress']) {
    if (!raws.some((f) => path.basename(f).startsWith(`${source}-`)))
      throw new Error(`no ${source}-*.profraw was written: the ${source} run did not load the instrumented build`);
  }
  for (const r of rows) process.stdout.write(`  ${line(r.file, r)}\n`);
  const engineTotal = sum(engineRows);
  process.stdout.write(`  ${line('engine (swizzle+profile+patch)', engineTotal)}\n`);
  process.stdout.write(`  ${line('all of src-native/ built here', sum(rows))}\n`);
  const allTotal = sum(rows);
  writeFileSync(
    path.join(out, 'summary.json'),
    `${JSON.stringify({ files: rows, engine: { ...engineTotal, pct: pct(engineTotal) }, all: { ...allTotal, pct: pct(allTotal) } }, null, 2)}\n`,
  );
  return { engine: pct(engineTotal), all: pct(allTotal) };
}

// ---- 4. fuzzing ----

function buildFuzzers() {
  const sanitize = [
    '-fsanitize=fuzzer,address,undefined',
    '-fno-sanitize-recover=undefined',
    '-fno-omit-frame-pointer',
    '-O1',
  ];
  const targets = {
    profile_parser_fuzz: {
      sources: [path.join(fuzzDir, 'profile_parser_fuzz.mm'), ...inNative('engine/profile.mm', 'engine/swizzle.mm')],
      dict: path.join(fuzzDir, 'profile_parser.dict'),
      seeds: [path.join(fuzzDir, 'corpus', 'profile_parser_fuzz')],
    },
    sim_snapshot_fuzz: {
      sources: [path.join(fuzzDir, 'sim_snapshot_fuzz.mm'), path.join(simRoot, 'src', 'SimCompute.mm')],
      dict: path.join(fuzzDir, 'sim_snapshot.dict'),
      // The bundled snapshots are the seeds: every shape the loader is meant to read.
      seeds: [path.join(repoRoot, 'snapshots')],
    },
  };
  const built = {};
  for (const [name, t] of Object.entries(targets)) {
    const binary = path.join(out, 'fuzz', name, name);
    build(
      binary,
      t.sources,
      sanitize,
      [...sanitize, '-lBlocksRuntime', '-lgnustep-base', '-lobjc', '-lpthread'],
      false,
    );
    built[name] = { binary, dict: t.dict, seeds: t.seeds };
  }
  return built;
}

function fuzz(targets) {
  const failures = [];
  for (const [name, { binary, dict, seeds }] of Object.entries(targets)) {
    const work = path.dirname(binary);
    const corpus = path.join(work, 'corpus');
    mkdirSync(corpus, { recursive: true });
    const regressions = path.join(fuzzDir, 'regressions', name);
    const env = {
      ...process.env,
      // GNUstep keeps process-lifetime allocations; leaks are not what this looks for.
      ASAN_OPTIONS: 'detect_leaks=0:abort_on_error=1',
      UBSAN_OPTIONS: 'halt_on_error=1:print_stacktrace=1',
    };
    if (existsSync(regressions)) {
      const inputs = readdirSync(regressions).map((f) => path.join(regressions, f));
      const r = spawnSync(binary, inputs, { env, encoding: 'utf8', cwd: work });
      say(`${name}: ${inputs.length} regression input(s) ${r.status === 0 ? 'pass' : `FAIL (exit ${r.status})`}`);
      if (r.status !== 0) {
        process.stderr.write(r.stderr.slice(-4000));
        failures.push(`${name} regressions`);
      }
    }
    const started = Date.now();
    const r = spawnSync(
      binary,
      [
        `-max_total_time=${fuzzSeconds}`,
        '-print_final_stats=1',
        `-dict=${dict}`,
        `-artifact_prefix=${work}/`,
        corpus,
        ...seeds,
      ],
      { env, encoding: 'utf8', cwd: work, maxBuffer: 256 << 20 },
    );
    const log = `${r.stdout}${r.stderr}`;
    writeFileSync(path.join(work, 'fuzz.log'), log);
    const runs = /stat::number_of_executed_units:\s*(\d+)/.exec(log)?.[1] ?? '?';
    const cov = [...log.matchAll(/cov: (\d+) ft: (\d+)/g)].pop();
    const crashes = readdirSync(work).filter((f) => /^(crash|leak|timeout|oom)-/.test(f));
    say(
      `${name}: ${((Date.now() - started) / 1000).toFixed(0)} s, ${runs} inputs, coverage ${cov ? `${cov[1]} edges / ${cov[2]} features` : '?'}, ` +
        `${r.status === 0 && crashes.length === 0 ? 'no crash' : `FAILED (exit ${r.status}; ${crashes.join(', ') || 'see fuzz.log'})`}`,
    );
    if (r.status !== 0 || crashes.length > 0) failures.push(name);
  }
  return failures;
}

function main() {
  if (process.platform !== 'linux') throw new Error('test:native-coverage runs on Linux, against the simulated Metal');
  // dist/ only when it does not match lib/ (scripts/build/source-stamp.mjs): in .ci/run the test command has just
  // built it, and a rebuild is about 23 CPU-seconds. The simulated build checks itself (about a second).
  const steps = staleReason() === null ? ['build:sim'] : ['build', 'build:sim'];
  for (const step of steps) {
    if (run('npm', ['run', '--silent', step], { cwd: repoRoot }).status !== 0)
      throw new Error(`npm run ${step} failed`);
  }
  if (!existsSync(simLibPath)) throw new Error(`${simLibPath} is missing after build:sim`);
  let status = 0;
  if (!has('--fuzz-only')) {
    rmSync(out, { recursive: true, force: true });
    mkdirSync(rawDir, { recursive: true });
    const started = Date.now();
    // Another major's Node first: a failed download ends the run before minutes of builds.
    const node = nodeMajor === null ? { binary: process.execPath, version: process.version } : nodeBinary(nodeMajor);
    if (!has('--skip-suite')) preparePackageCopy();
    const objects = buildInstrumented();
    const suiteFailed = has('--skip-suite') ? null : runSuite(node);
    runStress(objects[2]);
    const measured = report(objects);
    say(`coverage run took ${((Date.now() - started) / 1000).toFixed(0)} s`);
    if (suiteFailed !== null) {
      process.stderr.write(`native-coverage: ${suiteFailed}\n`);
      status = 1;
    }
    for (const [what, pct, min] of [
      ["the engine's", measured.engine, minEngine],
      ['all of src-native/ built here:', measured.all, minAll],
    ]) {
      if (pct < min) {
        process.stderr.write(`native-coverage: ${what} line coverage ${pct.toFixed(2)} % is below ${min} %\n`);
        status = 1;
      }
    }
  }
  if (!has('--skip-fuzz')) {
    const failures = fuzz(buildFuzzers());
    if (failures.length > 0) {
      process.stderr.write(`native-coverage: fuzzing failed: ${failures.join(', ')}\n`);
      status = 1;
    }
  }
  return status;
}

try {
  process.exitCode = main();
} catch (err) {
  process.stderr.write(`native-coverage: ${err.message}\n`);
  process.exitCode = 2;
}
