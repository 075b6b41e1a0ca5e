// A Mac without a compiler (scripts/build/install.cjs, lib/device/native.ts): a fresh guest has no Xcode Command Line
// Tools, and a package with no prebuilt binary for it cannot build its addon. The install succeeds with one line
// saying what to run, the first live call says the same in its typed error, and the offline features keep working.
// Simulated on Linux: a copy of the package without build/, process.platform set to darwin before the package loads,
// npm_config_platform=darwin so node-gyp-build looks for a macOS binary, and a PATH with no xcode-select (or a stub
// that answers as one where the tools are installed).
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { unloadableDetail } from '../../lib/device/native.js';
import { dist, root } from '../support/helpers.js';

interface InstallScript {
  noAddonLine(hasTools: boolean): string;
  hasBuildTools(env?: NodeJS.ProcessEnv): boolean;
}
const script = createRequire(import.meta.url)(path.join(root, 'scripts', 'build', 'install.cjs')) as InstallScript;

const NO_TOOLS =
  "no prebuilt addon matches this Mac, and Xcode's Command Line Tools, which build it, are missing: run `xcode-select --install`, then `npm rebuild metal-cap-shim`; the offline features work without it";
const TOOLS_SINCE =
  'no prebuilt addon matches this Mac and none was built: run `npm rebuild metal-cap-shim`; the offline features work without it';

let pkg: string;
/** A PATH with node alone, and one with an xcode-select stub that says the tools are installed. */
let bare: string;
let withTools: string;

beforeAll(() => {
  const dir = mkdtempSync(path.join(tmpdir(), 'mcs-no-addon-'));
  pkg = path.join(dir, 'metal-cap-shim');
  mkdirSync(path.join(pkg, 'scripts', 'build'), { recursive: true });
  cpSync(dist, path.join(pkg, 'dist'), { recursive: true });
  cpSync(path.join(root, 'snapshots'), path.join(pkg, 'snapshots'), { recursive: true });
  cpSync(path.join(root, 'package.json'), path.join(pkg, 'package.json'));
  cpSync(path.join(root, 'scripts', 'build', 'install.cjs'), path.join(pkg, 'scripts', 'build', 'install.cjs'));
  symlinkSync(path.join(root, 'node_modules'), path.join(pkg, 'node_modules'));
  bare = path.join(dir, 'bin-bare');
  withTools = path.join(dir, 'bin-tools');
  for (const bin of [bare, withTools]) {
    mkdirSync(bin);
    symlinkSync(process.execPath, path.join(bin, 'node'));
  }
  writeFileSync(path.join(withTools, 'xcode-select'), '#!/bin/sh\necho /Library/Developer/CommandLineTools\n');
  chmodSync(path.join(withTools, 'xcode-select'), 0o755);
});

/** Runs CommonJS `code` as if on a Mac, in the copy of the package, with `bin` as the whole PATH. */
function asMac(code: string, bin: string) {
  const { METAL_CAP_SHIM_SIM_SNAPSHOT: _sim, ...env } = process.env;
  return spawnSync(
    process.execPath,
    ['-e', `Object.defineProperty(process, 'platform', { value: 'darwin' });\n${code}`],
    { cwd: pkg, encoding: 'utf8', env: { ...env, PATH: bin, npm_config_platform: 'darwin' }, timeout: 60_000 },
  );
}

describe('the install on a Mac with no prebuilt binary for it', () => {
  it('without the Command Line Tools: succeeds, builds nothing, and says once what to run', () => {
    const r = asMac(`require('./scripts/build/install.cjs').install('darwin');`, bare);
    expect([r.status, r.stdout, r.stderr]).toEqual([0, '', `metal-cap-shim: ${NO_TOOLS}\n`]);
    expect(existsSync(path.join(pkg, 'build'))).toBe(false);
  });

  it('outside macOS: nothing at all', () => {
    const r = asMac(`require('./scripts/build/install.cjs').install('linux');`, bare);
    expect([r.status, r.stdout, r.stderr]).toEqual([0, '', '']);
  });

  it('tells the tools apart by xcode-select -p, which answers without a dialog', () => {
    expect([script.hasBuildTools({ PATH: bare }), script.hasBuildTools({ PATH: withTools })]).toEqual([false, true]);
  });
});

describe('the first live call says the same, in its typed error; the offline features work', () => {
  const CALLS = `const m = require('./dist/index.cjs');
    let strict = null;
    try { m.applyProfile('apple7', { strict: true }); } catch (e) { strict = { name: e.name, code: e.code, message: e.message }; }
    const p = m.probe();
    const applied = m.applyProfile('apple7');
    const offline = m.audit({ snapshot: 'vz-guest-m1-ultra-tahoe-stock' }).verdict.ok;
    console.log(JSON.stringify({ probe: [p.supported, p.reason, p.detail], applied: [applied.applied, applied.reason, applied.detail], strict, offline }));`;

  it.each([
    ['without the Command Line Tools', () => bare, NO_TOOLS],
    ['with them installed since', () => withTools, TOOLS_SINCE],
  ])('%s', (_what, bin, line) => {
    const r = asMac(CALLS, bin());
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({
      probe: [false, 'native-module-unavailable', line],
      applied: [false, 'native-module-unavailable', line],
      strict: { name: 'NativeError', code: 'ERR_NATIVE_UNAVAILABLE', message: line },
      offline: true,
    });
  });

  it('an addon that is there but will not load is another matter: reinstall or rebuild', () => {
    expect(unloadableDetail('dlopen failed: image not found')).toBe(
      'the native module could not be loaded (dlopen failed: image not found); reinstall metal-cap-shim or run `npm rebuild metal-cap-shim`',
    );
    const fake = { noAddonLine: script.noAddonLine, hasBuildTools: () => true };
    expect(unloadableDetail('No native build was found for platform=darwin arch=arm64', fake)).toBe(TOOLS_SINCE);
  });
});
