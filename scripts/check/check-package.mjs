#!/usr/bin/env node
// Package checks run by .ci/run after the test suite:
//   1. `npm pack` contents: what users need is in, test/sim-metal and sources they do not need are out;
//   2. publint (strict) and arethetypeswrong in every resolution mode;
//   3. ESM and CJS exports are the same objects, for the root and for `metal-cap-shim/tables`, and the two entries
//      share one instance (an error thrown through tables is the root's class);
//   4. the built addon passes the Node-sensitive part of the suite (NODE_MAJORS_FILES, scripts/build/node-versions.mjs)
//      on the other Node majors, or on those --node-majors names (.ci/run gives one to the native coverage run);
//      the conformance suite (llama.cpp's own code, test/conformance/) ran once in the test command and is not rerun;
//   5. a clean install of the tarball into a fresh project with no C/C++ compiler on PATH: it installs, probe()
//      reports unsupported, and the CLI's offline audit of a bundled snapshot works;
//   6. a strict TypeScript consumer of that installed tarball (test/package/): results narrow on their flag without
//      `!`, a wrong error code does not compile, and the compiled program runs (buildMatrix([fieldReport(...)]));
//   7. `npm pack` straight after `npm ci` in a fresh copy of the working tree (no dist/ yet) contains dist/ and
//      LICENSE: the prepack script builds.
// Flags: --skip-node-versions (for a quick local run), --node-majors 24 (only these of NODE_MAJORS).
import { execFileSync, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { majorsOption, NODE_MAJORS, NODE_MAJORS_FILES, nodeBinary } from '../build/node-versions.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const args = process.argv.slice(2);
const majors = (() => {
  try {
    return majorsOption(args, '--node-majors', NODE_MAJORS);
  } catch (err) {
    console.error(`check-package: ${err.message}`);
    process.exit(2);
  }
})();
let failures = 0;

function section(title) {
  console.log(`\n-- ${title}`);
}
function check(ok, message) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${message}`);
  if (!ok) failures++;
}
function run(cmd, cmdArgs, options = {}) {
  const r = spawnSync(cmd, cmdArgs, { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20, ...options });
  if (r.error) throw r.error;
  return r;
}

// ---- 1. pack contents ----
section('npm pack contents');
const packDir = mkdtempSync(path.join(tmpdir(), 'mcs-pack-'));
const packed = JSON.parse(
  execFileSync('npm', ['pack', '--json', '--pack-destination', packDir], { cwd: root, encoding: 'utf8' }),
)[0];
const tarball = path.join(packDir, packed.filename);
const files = packed.files.map((f) => f.path);
for (const required of [
  'package.json',
  'README.md',
  'LICENSE',
  'binding.gyp',
  'scripts/build/install.cjs',
  'dist/index.js',
  'dist/index.cjs',
  'dist/index.d.ts',
  'dist/index.d.cts',
  'dist/tables.js',
  'dist/tables.cjs',
  'dist/tables.d.mts',
  'dist/tables.d.cts',
  // node10 resolution (no "exports") finds the subpaths through these folders.
  'tables/package.json',
  'register/package.json',
  'dist/register.js',
  'dist/register.cjs',
  'dist/cli.js',
  // doctor's probe runner, started as a process of its own (lib/doctor/runner-main.ts).
  'dist/doctor-runner.js',
  // bench --node-llama-cpp's child, one process per side and round (lib/bench/node-llama-cpp-child.ts).
  'dist/bench-node-llama-cpp.js',
  'snapshots/vz-guest-m1-ultra-tahoe-stock.json',
  'src-native/addon/addon.mm',
  'src-native/platform/host_darwin.mm',
  'src-native/inject/inject.mm',
]) {
  check(files.includes(required), `contains ${required}`);
}
const forbidden = [
  /^test\//,
  /^lib\//,
  /^bench\//,
  /^examples\//,
  /^build\//,
  /^\.ci\//,
  /^\.github\//,
  /host_sim\.mm$/,
  /^scripts\/(?!build\/install\.cjs$)/,
];
// The user docs the README links: every docs/*.md page (test/repo/docs.test.ts checks the links themselves).
for (const page of readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md'))) {
  check(files.includes(`docs/${page}`), `contains docs/${page}`);
}
for (const pattern of forbidden) {
  const hits = files.filter((f) => pattern.test(f));
  check(hits.length === 0, `contains nothing matching ${pattern}${hits.length ? `: ${hits.join(', ')}` : ''}`);
}
if (existsSync(path.join(root, 'prebuilds'))) {
  check(
    files.some((f) => f.startsWith('prebuilds/')),
    'contains the prebuilds/ that exist',
  );
} else {
  console.log('note no prebuilds/ here (they are built on macOS by the release workflow)');
}
console.log(`     ${files.length} files, ${(packed.size / 1024).toFixed(1)} KiB packed`);

// ---- 2. publint, arethetypeswrong ----
section('publint --strict');
const publint = run('npx', ['--no-install', 'publint', 'run', tarball, '--strict']);
console.log((publint.stdout + publint.stderr).trim());
check(publint.status === 0, 'publint is clean');

section('arethetypeswrong (node10, node16-cjs, node16-esm, bundler)');
const attw = run('npx', ['--no-install', 'attw', tarball, '--format', 'table-flipped', '--no-emoji', '--no-color']);
console.log((attw.stdout + attw.stderr).trim());
check(attw.status === 0, 'arethetypeswrong finds no problem in any resolution mode');

// ---- 3. ESM and CJS are the same objects ----
section('ESM and CJS exports');
for (const entry of ['index', 'tables']) {
  const same = run(process.execPath, [
    '--input-type=module',
    '-e',
    `import { createRequire } from 'node:module';
     const esm = await import(${JSON.stringify(path.join(root, 'dist', `${entry}.js`))});
     const cjs = createRequire(import.meta.url)(${JSON.stringify(path.join(root, 'dist', `${entry}.cjs`))});
     const names = Object.keys(cjs);
     const differ = names.filter((n) => esm[n] !== cjs[n]);
     const missing = names.filter((n) => !(n in esm));
     console.log(JSON.stringify({ count: names.length, differ, missing }));`,
  ]);
  const sameResult = JSON.parse(same.stdout || '{}');
  check(
    same.status === 0 && sameResult.count > 0 && sameResult.differ.length === 0 && sameResult.missing.length === 0,
    `all ${sameResult.count} exports of dist/${entry} are identical objects in ESM and CJS`,
  );
}
// One instance behind both entries: a snapshot that does not exist, asked through tables, is the root's class.
const shared = run(process.execPath, [
  '--input-type=module',
  '-e',
  `const root = await import(${JSON.stringify(path.join(root, 'dist', 'index.js'))});
   const tables = await import(${JSON.stringify(path.join(root, 'dist', 'tables.cjs'))});
   try { tables.loadSnapshot('no-such-snapshot-name'); console.log('no error'); }
   catch (err) { console.log(err instanceof root.SnapshotNotFoundError && err instanceof root.MetalCapShimError ? 'shared' : 'two copies'); }`,
]);
check(
  shared.stdout.trim() === 'shared',
  `metal-cap-shim/tables throws the root's error classes (${shared.stdout.trim() || shared.stderr.trim()})`,
);

// ---- 4. the other Node majors ----
section('native suite on other Node majors');
// The `unit` project only: the conformance project builds and runs llama.cpp's own code, which does not depend on the
// Node version running the tests, and once per run is its budget.
console.log('conformance suite: not rerun on other Node majors (it ran once in the test command)');
const elsewhere = NODE_MAJORS.filter((major) => !majors.includes(major));
if (elsewhere.length > 0) console.log(`Node ${elsewhere.join(', ')}: not here (--node-majors ${majors.join(',')})`);
if (args.includes('--skip-node-versions')) {
  console.log('skipped (--skip-node-versions)');
} else {
  for (const major of majors) {
    let node;
    try {
      node = nodeBinary(major);
    } catch (err) {
      check(false, `Node ${major}: ${err.message}`);
      continue;
    }
    const { binary, version } = node;
    const suite = run(
      binary,
      [
        path.join(root, 'node_modules', 'vitest', 'vitest.mjs'),
        'run',
        '--project',
        'unit',
        '--reporter',
        'dot',
        ...NODE_MAJORS_FILES,
      ],
      {
        env: { ...process.env, NO_COLOR: '1' },
      },
    );
    const summary = (suite.stdout + suite.stderr)
      .split('\n')
      .filter((l) => /Test Files|Tests\s/.test(l))
      .join(' | ')
      .replace(/\s+/g, ' ');
    check(suite.status === 0, `Node ${version}: ${summary.trim()}`);
    if (suite.status !== 0) console.log(suite.stdout.slice(-4000), suite.stderr.slice(-4000));
  }
}

// ---- 5. clean install without a compiler ----
section('clean install of the tarball, no C/C++ compiler on PATH');
const project = mkdtempSync(path.join(tmpdir(), 'mcs-clean-'));
const bin = path.join(project, '.bin-no-compilers');
mkdirSync(bin);
// Only what npm and its lifecycle scripts need: node, npm, npx and a shell.
for (const tool of ['node', 'npm', 'npx', 'sh', 'env']) {
  const found = run('sh', ['-c', `command -v ${tool}`]).stdout.trim();
  if (found) symlinkSync(found, path.join(bin, tool));
}
const cleanEnv = { ...process.env, PATH: bin };
// Outside macOS the simulated Metal is selected by this variable alone; an installed package must work without it.
delete cleanEnv.METAL_CAP_SHIM_SIM_SNAPSHOT;
for (const compiler of ['cc', 'c++', 'gcc', 'g++', 'clang', 'clang++', 'clang++-14', 'make', 'python3']) {
  const found = spawnSync('sh', ['-c', `command -v ${compiler}`], { env: cleanEnv, encoding: 'utf8' });
  check(found.status !== 0, `${compiler} is not on the clean PATH`);
}
writeFileSync(path.join(project, 'package.json'), '{"name":"clean-install-check","private":true,"type":"module"}\n');
const install = run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball], {
  cwd: project,
  env: cleanEnv,
});
console.log((install.stdout + install.stderr).trim().split('\n').slice(-3).join('\n'));
check(install.status === 0, 'npm install of the tarball succeeds');
const installed = path.join(project, 'node_modules', 'metal-cap-shim');
check(!existsSync(path.join(installed, 'build')), 'no native build was attempted');
const probeOut = run(
  process.execPath,
  ['--input-type=module', '-e', `import { probe } from 'metal-cap-shim'; console.log(JSON.stringify(probe()));`],
  {
    cwd: project,
    env: cleanEnv,
  },
);
const report = JSON.parse(probeOut.stdout || '{}');
check(
  report.supported === false && report.reason === 'unsupported-platform',
  `probe() there reports supported: false (${report.reason})`,
);
const cjsOut = run(process.execPath, ['-e', `console.log(require('metal-cap-shim').probe().supported)`], {
  cwd: project,
  env: cleanEnv,
});
check(cjsOut.stdout.trim() === 'false', 'require() works there too');
// The profile an audit without --profile names: the package's default (dist/index.cjs, built above by npm pack).
const { DEFAULT_PROFILE: defaultProfile } = createRequire(import.meta.url)(path.join(root, 'dist', 'index.cjs'));
const auditOut = run(
  path.join(bin, 'npx'),
  ['--no-install', 'metal-cap-shim', 'audit', '--snapshot', 'vz-guest-m1-ultra-tahoe-stock'],
  {
    cwd: project,
    env: cleanEnv,
  },
);
check(
  auditOut.status === 0 && new RegExp(`^Verdict: ${defaultProfile} `, 'm').test(auditOut.stdout),
  'the CLI’s offline audit of a bundled snapshot works',
);
console.log(
  auditOut.stdout
    .split('\n')
    .filter((l) => l.startsWith('Verdict'))
    .join('\n'),
);
check(readdirSync(path.join(installed, 'snapshots')).length >= 3, 'bundled snapshots are installed');
// A Mac without Xcode's Command Line Tools, where no prebuilt binary matches (a tarball packed in a clone has none):
// the installed install script, run as on macOS with this PATH (no xcode-select), succeeds, builds nothing and says
// what to run (test/device/native.no-addon.test.ts shows the first live call saying the same).
const asMac = run(
  process.execPath,
  [
    '-e',
    `Object.defineProperty(process, 'platform', { value: 'darwin' }); require(${JSON.stringify(path.join(installed, 'scripts', 'build', 'install.cjs'))}).install('darwin');`,
  ],
  { cwd: project, env: { ...cleanEnv, npm_config_platform: 'darwin' } },
);
check(
  asMac.status === 0 &&
    asMac.stderr.startsWith('metal-cap-shim: no prebuilt addon matches this Mac') &&
    asMac.stderr.includes('run `xcode-select --install`, then `npm rebuild metal-cap-shim`') &&
    asMac.stderr.split('\n').length === 2 &&
    !existsSync(path.join(installed, 'build')),
  'as a Mac without the Command Line Tools: the install script succeeds, builds nothing, and says what to run in one line',
);

// ---- 6. a strict TypeScript consumer of the installed tarball ----
section('strict TypeScript consumer of the installed tarball (test/package/)');
for (const file of ['consumer.mts', 'consumer.cts', 'tsconfig.json']) {
  copyFileSync(path.join(root, 'test', 'package', file), path.join(project, file));
}
// The consumer's own @types/node, as any TypeScript project has; TypeScript itself is this repository's.
symlinkSync(path.join(root, 'node_modules', '@types'), path.join(project, 'node_modules', '@types'));
const tsc = run(
  process.execPath,
  [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'],
  { cwd: project },
);
console.log((tsc.stdout + tsc.stderr).trim() || '(tsc: no diagnostics)');
check(
  tsc.status === 0,
  'tsc --strict compiles it: narrowing without `!`, and every @ts-expect-error (a wrong error code) is an error',
);
const consumerOut = run(process.execPath, [path.join(project, 'out', 'consumer.mjs')], { cwd: project, env: cleanEnv });
let seen = {};
try {
  seen = JSON.parse(consumerOut.stdout);
} catch {
  console.log(consumerOut.stdout, consumerOut.stderr);
}
console.log(`     ${consumerOut.stdout.trim()}`);
check(
  consumerOut.status === 0 &&
    seen.apply?.reason === 'unsupported-platform' &&
    seen.doctor?.reason === 'unsupported-platform' &&
    seen.doctorReplay === 'VirtualMac2,1' &&
    seen.invalidProfile === 'ERR_INVALID_PROFILE' &&
    seen.tablesError === 'ERR_SNAPSHOT_NOT_FOUND' &&
    seen.matrix?.rows === 1 &&
    seen.matrix?.cell === 1 &&
    seen.matrix?.duplicates?.length === 1 &&
    JSON.stringify(seen.invalidReport) === JSON.stringify(['ERR_INVALID_REPORT', 'schema']),
  'the compiled consumer runs: doctor() narrows, buildMatrix([fieldReport(...), { where, report }]) counts the copy once, tables throws the root’s classes',
);
const cjsConsumer = run(process.execPath, [path.join(project, 'out', 'consumer.cjs')], { cwd: project, env: cleanEnv });
const cjsSeen = JSON.parse(cjsConsumer.stdout || '{}');
check(
  cjsConsumer.status === 0 && cjsSeen.model === 'unsupported-platform' && cjsSeen.family === 1007,
  'the CommonJS consumer runs too, metal-cap-shim/tables included',
);

// ---- 7. npm pack straight after npm ci, in a fresh copy ----
section('npm pack straight after npm ci in a fresh copy of the working tree');
const fresh = mkdtempSync(path.join(tmpdir(), 'mcs-fresh-'));
const listed = run('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'])
  .stdout.split('\0')
  .filter(Boolean);
for (const file of listed) {
  if (!existsSync(path.join(root, file))) continue; // deleted in the working tree, not yet committed
  mkdirSync(path.dirname(path.join(fresh, file)), { recursive: true });
  copyFileSync(path.join(root, file), path.join(fresh, file));
}
check(!existsSync(path.join(fresh, 'dist')), `the copy (${listed.length} files) has no dist/, like a fresh clone`);
const ci = run('npm', ['ci', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: fresh });
if (ci.status !== 0) console.log(ci.stderr.slice(-3000));
check(ci.status === 0, 'npm ci succeeds');
const freshPack = run('npm', ['pack', '--json', '--pack-destination', fresh], { cwd: fresh });
let freshFiles = [];
try {
  freshFiles = JSON.parse(freshPack.stdout)[0].files.map((f) => f.path);
} catch {
  console.log(freshPack.stdout.slice(-2000), freshPack.stderr.slice(-2000));
}
for (const required of [
  'LICENSE',
  'dist/index.js',
  'dist/index.cjs',
  'dist/index.d.mts',
  'dist/index.d.cts',
  'dist/tables.js',
  'dist/tables.cjs',
  'dist/register.js',
  'dist/cli.js',
  // doctor's probe runner, started as a process of its own (lib/doctor/runner-main.ts).
  'dist/doctor-runner.js',
  'dist/bench-node-llama-cpp.js',
]) {
  check(freshFiles.includes(required), `the tarball contains ${required}`);
}
check(
  readFileSync(path.join(fresh, 'LICENSE'), 'utf8').startsWith('MIT License') &&
    JSON.parse(readFileSync(path.join(fresh, 'package.json'), 'utf8')).license === 'MIT',
  'LICENSE is the MIT licence package.json names',
);

console.log(`\n${failures === 0 ? 'package checks passed' : `${failures} package check(s) failed`}`);
process.exit(failures === 0 ? 0 : 1);
