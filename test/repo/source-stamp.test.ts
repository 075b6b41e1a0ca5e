import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { root } from '../support/helpers.js';

// scripts/build/source-stamp.mjs decides whether dist/ matches lib/ (test/global-setup.ts rebuilds when it does not).
// Each test runs a copy of it in a private tree of its own, where sources and builds can be edited freely.
let tree: string;

function write(file: string, text: string): void {
  mkdirSync(path.dirname(path.join(tree, file)), { recursive: true });
  writeFileSync(path.join(tree, file), text);
}

function check(): { status: number | null; stderr: string } {
  const r = spawnSync(process.execPath, [path.join(tree, 'scripts', 'build', 'source-stamp.mjs')], {
    encoding: 'utf8',
  });
  return { status: r.status, stderr: r.stderr };
}

function stamp(): void {
  const r = spawnSync(process.execPath, [
    '--input-type=module',
    '-e',
    `
    import { writeFileSync } from 'node:fs';
    const m = await import(${JSON.stringify(path.join(tree, 'scripts', 'build', 'source-stamp.mjs'))});
    writeFileSync(m.stampFile, JSON.stringify({ sources: m.sourceStamp() }));`,
  ]);
  expect(r.status).toBe(0);
}

beforeEach(() => {
  tree = mkdtempSync(path.join(tmpdir(), 'mcs-stamp-'));
  mkdirSync(path.join(tree, 'scripts', 'build'), { recursive: true });
  mkdirSync(path.join(tree, 'build'));
  copyFileSync(
    path.join(root, 'scripts', 'build', 'source-stamp.mjs'),
    path.join(tree, 'scripts', 'build', 'source-stamp.mjs'),
  );
  write('lib/index.ts', 'export const a = 1;\n');
  write('lib/cli/probe.ts', 'export const b = 2;\n');
  write('types/binding.d.ts', 'export interface B {}\n');
  write('tsup.config.ts', 'export default {};\n');
  write('tsconfig.json', '{}\n');
  write('scripts/build/post-build.mjs', '// post-build\n');
  write('package.json', '{"name":"x"}\n');
  write('dist/index.cjs', '');
  write('dist/cli.js', '');
  stamp();
});
afterEach(() => rmSync(tree, { recursive: true, force: true }));

describe('scripts/build/source-stamp.mjs', () => {
  it('a build stamped from the sources as they are is current', () => {
    expect(check()).toEqual({ status: 0, stderr: '' });
  });

  it.each([
    ['an edited file', 'lib/cli/probe.ts', 'export const b = 3;\n'],
    ['a new file', 'lib/new.ts', '\n'],
    ['an edited tsup configuration', 'tsup.config.ts', 'export default { a: 1 };\n'],
    ['an edited declaration of the addon', 'types/binding.d.ts', 'export interface B { a: 1 }\n'],
    ['an edited TypeScript configuration', 'tsconfig.json', '{"compilerOptions":{}}\n'],
    ['an edited post-build step', 'scripts/build/post-build.mjs', '// changed\n'],
    ['an edited package.json', 'package.json', '{"name":"y"}\n'],
  ])('%s makes dist/ stale', (_what, file, text) => {
    write(file, text);
    expect(check()).toEqual({ status: 1, stderr: 'lib/ (or the build configuration) changed since dist/ was built\n' });
  });

  it("--build (npm pack's prepack) builds only when dist/ is stale, through npm_execpath, its output on stderr", () => {
    // A stand-in for npm: it records what it was asked and prints on stdout, which must reach stderr.
    write(
      'fake-npm.cjs',
      "require('node:fs').appendFileSync(__dirname + '/asked.txt', process.argv.slice(2).join(' ') + '\\n'); console.log('built');\n",
    );
    const build = () =>
      spawnSync(process.execPath, [path.join(tree, 'scripts', 'build', 'source-stamp.mjs'), '--build'], {
        encoding: 'utf8',
        env: { ...process.env, npm_execpath: path.join(tree, 'fake-npm.cjs') },
      });
    const current = build();
    expect([current.status, current.stdout, current.stderr]).toEqual([0, '', '']);
    expect(existsSync(path.join(tree, 'asked.txt'))).toBe(false);
    write('lib/index.ts', 'export const a = 2;\n');
    const stale = build();
    expect([stale.status, stale.stdout, stale.stderr]).toEqual([0, '', 'built\n']);
    expect(readFileSync(path.join(tree, 'asked.txt'), 'utf8')).toBe('run build\n');
    const { scripts } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(scripts.prepack).toBe('node scripts/build/source-stamp.mjs --build');
  });

  it('a file moved to another folder makes dist/ stale (paths count, not only contents)', () => {
    rmSync(path.join(tree, 'lib', 'cli', 'probe.ts'));
    write('lib/device/probe.ts', 'export const b = 2;\n');
    expect(check()).toEqual({ status: 1, stderr: 'lib/ (or the build configuration) changed since dist/ was built\n' });
  });

  it.each(['dist/index.cjs', 'dist/cli.js'])('without %s there is no build', (file) => {
    rmSync(path.join(tree, file));
    expect(check()).toEqual({ status: 1, stderr: 'dist/ is missing\n' });
  });

  it('a dist/ without a stamp is not trusted', () => {
    rmSync(path.join(tree, 'build', 'dist-stamp.json'));
    expect(check()).toEqual({ status: 1, stderr: 'dist/ was built without a stamp (build/dist-stamp.json)\n' });
  });

  it('an unreadable stamp is not trusted', () => {
    write('build/dist-stamp.json', '{');
    expect(check()).toEqual({ status: 1, stderr: 'build/dist-stamp.json is unreadable\n' });
  });
});

describe('the suite itself', () => {
  it('ran against the dist/ its sources build (the global setup checked it first)', () => {
    const r = spawnSync(process.execPath, [path.join(root, 'scripts', 'build', 'source-stamp.mjs')], {
      encoding: 'utf8',
    });
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
  });
});
