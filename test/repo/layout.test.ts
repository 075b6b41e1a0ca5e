// test/ is laid out like lib/: the tests of lib/<layer>/<file>.ts are test/<layer>/<file>.test.ts, or
// test/<layer>/<file>.<aspect>.test.ts when a suite needs a process of its own (one that never loads the addon, or that
// loads libraries for good), so a file's tests are found by its name; those of lib/<file>.ts are test/<file>.test.ts.
// Suites about a scenario rather than one file have folders of their own. docs/testing.md ("Where a test lives") has
// the list.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { root } from '../support/helpers.js';

/** Folders of test/ that hold suites about a scenario, not about one lib/ file, and folders that hold no suites. */
const SCENARIO_FOLDERS: readonly string[] = Object.freeze([
  'e2e',
  'security',
  'native',
  'sanitizers',
  'repo',
  'sim-metal',
  'live',
  'conformance',
]);
const SUPPORT_FOLDERS: readonly string[] = Object.freeze(['support', 'fixtures', 'fuzz', 'msl', 'package']);

/** Paths relative to `dir`, with `/`, of every file below it (node_modules and `__snapshots__` left out). */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((f) => f.split(path.sep).join('/'))
    .filter((f) => !f.split('/').some((part) => part === 'node_modules' || part === '__snapshots__'))
    .sort();
}

/** The lib/ file a test file is named for: `patch/apply.no-addon.test.ts` → `patch/apply.ts`. */
function libFileFor(testFile: string): string {
  const dir = path.posix.dirname(testFile);
  const name = path.posix.basename(testFile).split('.')[0]!;
  return dir === '.' ? `${name}.ts` : `${dir}/${name}.ts`;
}

/**
 * The test files (relative to test/) out of place, each with the reason: one in a layer folder (or at the top) named
 * for no file of that folder of lib/, one nested below a layer folder, and one in a folder that is neither a layer of
 * lib/ nor a scenario folder.
 */
function misplaced(testFiles: readonly string[], libFiles: readonly string[]): string[] {
  const lib = new Set(libFiles);
  const layers = new Set(libFiles.filter((f) => f.includes('/')).map((f) => f.slice(0, f.indexOf('/'))));
  const bad: string[] = [];
  for (const file of testFiles) {
    if (!file.endsWith('.test.ts')) continue;
    const parts = file.split('/');
    const folder = parts.length === 1 ? '.' : parts[0]!;
    if (SCENARIO_FOLDERS.includes(folder)) continue;
    if (folder !== '.' && !layers.has(folder)) {
      bad.push(`${file}: test/${folder}/ is neither a layer of lib/ nor a scenario folder`);
    } else if (parts.length > 2) {
      bad.push(`${file}: a layer's tests are directly in test/${folder}/`);
    } else if (!lib.has(libFileFor(file))) {
      bad.push(`${file}: named for lib/${libFileFor(file)}, which does not exist`);
    }
  }
  return bad;
}

describe('test/ is laid out like lib/', () => {
  const testFiles = filesUnder(path.join(root, 'test'));
  const libFiles = filesUnder(path.join(root, 'lib')).filter((f) => f.endsWith('.ts'));

  it('every test file in a layer folder is named for a file of that layer; the rest are in scenario folders', () => {
    expect(misplaced(testFiles, libFiles)).toEqual([]);
  });

  it('every folder of test/ is a layer of lib/, a scenario folder or a support folder', () => {
    const layers = new Set(libFiles.filter((f) => f.includes('/')).map((f) => f.slice(0, f.indexOf('/'))));
    const folders = [...new Set(testFiles.filter((f) => f.includes('/')).map((f) => f.slice(0, f.indexOf('/'))))];
    expect(
      folders.filter((f) => !layers.has(f) && !SCENARIO_FOLDERS.includes(f) && !SUPPORT_FOLDERS.includes(f)),
    ).toEqual([]);
  });

  it('finds a test named for no file, one in an unknown folder and one nested below a layer', () => {
    const planted = [
      ...testFiles,
      'patch/aply.test.ts',
      'device/probes.vm.test.ts',
      'helpers.test.ts',
      'misc/anything.test.ts',
      'doctor/native/doctor.test.ts',
    ];
    expect(misplaced(planted, libFiles)).toEqual([
      'patch/aply.test.ts: named for lib/patch/aply.ts, which does not exist',
      'device/probes.vm.test.ts: named for lib/device/probes.ts, which does not exist',
      'helpers.test.ts: named for lib/helpers.ts, which does not exist',
      'misc/anything.test.ts: test/misc/ is neither a layer of lib/ nor a scenario folder',
      "doctor/native/doctor.test.ts: a layer's tests are directly in test/doctor/",
    ]);
  });

  it('names a test of lib/X/Y.ts for Y, with or without an aspect', () => {
    expect(
      [
        'patch/apply.test.ts',
        'patch/apply.no-addon.test.ts',
        'engines/llama-cpp-releases.test.ts',
        'register.test.ts',
      ].map(libFileFor),
    ).toEqual(['patch/apply.ts', 'patch/apply.ts', 'engines/llama-cpp-releases.ts', 'register.ts']);
  });
});
