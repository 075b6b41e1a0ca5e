#!/usr/bin/env node
// `npm run format`: formats the repository (Biome for TypeScript, JavaScript and JSON, biome.json; clang-format 19
// for the Objective-C++ and C sources git tracks, .clang-format). `npm run lint` (this script with --check) changes
// nothing: it fails when a file is not formatted or Biome's linter reports anything, and .ci/run runs it.
import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const check = process.argv.includes('--check');
const CLANG_FORMAT = process.env.CLANG_FORMAT ?? 'clang-format-19';
const NATIVE = /\.(mm|m|h|c|cc|cpp)$/;

function run(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit' });
  if (r.error) {
    console.error(
      `${cmd}: ${r.error.message}${r.error.code === 'ENOENT' ? ' (apt-get install clang-format-19, or set CLANG_FORMAT)' : ''}`,
    );
    return 1;
  }
  return r.status ?? 1;
}

const biome = path.join(root, 'node_modules', '.bin', 'biome');
let failed = run(biome, check ? ['check', '--error-on-warnings', '.'] : ['check', '--write', '.']) !== 0;

const natives = execFileSync('git', ['ls-files', '-z', '--', 'src-native', 'test'], { cwd: root, encoding: 'utf8' })
  .split('\0')
  .filter((f) => NATIVE.test(f));
if (natives.length > 0) {
  const args = check ? ['--style=file', '--dry-run', '--Werror', ...natives] : ['--style=file', '-i', ...natives];
  failed = run(CLANG_FORMAT, args) !== 0 || failed;
}
if (failed)
  console.error(
    check
      ? 'lint: not clean (`npm run format` fixes the formatting; the lint findings need an edit)'
      : 'format: see above',
  );
process.exitCode = failed ? 1 : 0;
