// The consumer scan's llama.cpp side, over the simulated VM guest: each loaded ggml-metal with ggml_version() of its
// ggml, the generation markers it exports, node-llama-cpp's _nlcBuildMetadata.json next to it, and the rules that
// follow, in status() and in a live audit. The libraries here are stand-ins built for the test; the conformance
// suite loads llama.cpp's own (test/conformance/). The tests share one process: each sees the libraries loaded
// before it.

import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { status } from '../../lib/patch/apply.js';
import { audit } from '../../lib/audit/audit.js';
import { nodeLlamaCppRelease } from '../../lib/engines/loaded-llama.js';
import { describeSim, loadFixture, loadLibrarySource, requireSimBuild } from '../support/helpers.js';
import { useSimulation } from '../support/simulation.js';

let dir: string;
const version = (v: string) => `const char *ggml_version(void) { return "${v}"; }\n`;
const fn = (name: string, symbol = name) =>
  `void ${name.replace(/\W/g, '_')}(void) __asm__("${symbol}");\nvoid ${name.replace(/\W/g, '_')}(void) {}\n`;
const CHIP_PICK = '_ZN17ggml_metal_tuning11fa_vec_pickE20ggml_metal_device_idiiiill';
const metadata = (release: unknown) =>
  JSON.stringify({ buildOptions: { platform: 'mac', llamaCpp: { repo: 'ggml-org/llama.cpp', release } } });

function folder(name: string, nlc?: string): string {
  const d = path.join(dir, name);
  mkdirSync(d);
  if (nlc !== undefined) writeFileSync(path.join(d, '_nlcBuildMetadata.json'), nlc);
  return d;
}

describeSim('the loaded llama.cpp: release, ggml version and rules', () => {
  useSimulation('vz-guest-m1-ultra-tahoe-stock');
  beforeAll(() => {
    requireSimBuild();
    dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'mcs-loaded-llama-')));
  });

  it('nothing loaded: status names no llama.cpp, and a live audit falls back to the newest rules', () => {
    expect(status().llamaCpp).toEqual([]);
    expect(audit({ profile: 'apple7', engines: ['llama.cpp'] }).llamaCppRules).toEqual({
      rules: 'current',
      releases: 'v0.5.0 and later',
      release: null,
      source: 'default',
      detail: 'no llama.cpp loaded and no rules asked for: the newest rules',
    });
  });

  it('a node-llama-cpp v0.4.0 build: its ggml version, its release from the metadata, the rules its symbols show', () => {
    const d = folder('nlc-3.21.1', metadata('v0.4.0'));
    const image = loadLibrarySource(
      d,
      'libggml-metal.so',
      `${version('0.23.0')}${fn('ggml_metal_device_init')}${fn('pick', CHIP_PICK)}`,
    );
    expect(status().llamaCpp).toEqual([
      {
        image,
        ggmlVersion: '0.23.0',
        release: 'v0.4.0',
        rules: 'chip-tuning',
        detail:
          "libggml-metal.so: llama.cpp v0.4.0 (node-llama-cpp's build metadata), ggml 0.23.0; it exports ggml_metal_tuning::fa_vec_pick(ggml_metal_device_id, …): tuning by chip",
      },
    ]);
    // A live audit predicts with the loaded llama.cpp's rules, unless told otherwise.
    const live = audit({ profile: 'apple7', engines: ['llama.cpp'] });
    expect({
      rules: live.llamaCppRules.rules,
      release: live.llamaCppRules.release,
      source: live.llamaCppRules.source,
    }).toEqual({
      rules: 'chip-tuning',
      release: 'v0.4.0',
      source: 'loaded',
    });
    expect(live.devices[0]!.engines[0]!.after.engine === 'llama.cpp' && live.devices[0]!.engines[0]!.after.rules).toBe(
      'chip-tuning',
    );
    expect(audit({ profile: 'apple7', engines: ['llama.cpp'], rules: 'legacy' }).llamaCppRules.source).toBe('option');
  });

  it('a legacy build without ggml_version or metadata; ggml-metal linked into an image named otherwise', () => {
    const legacy = loadLibrarySource(folder('legacy'), 'libggml-metal-b4753.so', fn('ggml_backend_metal_init'));
    const app = loadLibrarySource(folder('app'), 'libapp.so', `${version('0.0.6431')}${fn('ggml_backend_metal_reg')}`);
    // An image named otherwise that only calls into ggml-metal (defines none of its symbols) is not one.
    loadLibrarySource(folder('other'), 'libother.so', fn('unrelated_function'));
    expect(status().llamaCpp.slice(1)).toEqual([
      {
        image: legacy,
        ggmlVersion: null,
        release: null,
        rules: 'legacy',
        detail:
          'libggml-metal-b4753.so: no ggml_version(); no ggml-metal-device.m symbol, release or version: legacy rules',
      },
      {
        image: app,
        ggmlVersion: '0.0.6431',
        release: null,
        rules: 'legacy',
        detail: 'libapp.so: ggml 0.0.6431; rules by its ggml version',
      },
    ]);
  });
});

describeSim("node-llama-cpp's build metadata", () => {
  useSimulation('vz-guest-m1-ultra-tahoe-stock');
  beforeAll(() => {
    dir ??= realpathSync(mkdtempSync(path.join(tmpdir(), 'mcs-loaded-llama-')));
  });

  it.each<[string, string | undefined, string | null]>([
    ['a release tag', metadata('b4753'), 'b4753'],
    ['no file', undefined, null],
    ['not JSON', '{"buildOptions":', null],
    ['no llamaCpp section', JSON.stringify({ buildOptions: {} }), null],
    ['a release that is no tag', metadata('latest'), null],
    ['a release that is no string', metadata(4753), null],
    ['JSON null', 'null', null],
    ['a release in an array', metadata(['b4753']), null],
    ['exactly 64 KiB', metadata('v0.4.0').padEnd(64 * 1024), 'v0.4.0'],
    ['a byte past 64 KiB', metadata('v0.4.0').padEnd(64 * 1024 + 1), null],
  ])('%s', (what, content, release) => {
    expect(nodeLlamaCppRelease(folder(`metadata-${what.replace(/\W/g, '-')}`, content))).toBe(release);
  });

  it('a folder where the file should be: null', () => {
    const d = folder('metadata-folder');
    mkdirSync(path.join(d, '_nlcBuildMetadata.json'));
    expect(nodeLlamaCppRelease(d)).toBeNull();
  });

  it('leaves no descriptor open, read or refused', () => {
    const read = folder('metadata-descriptors', metadata('b4753'));
    const big = folder('metadata-descriptors-big', metadata('b4753').padEnd(64 * 1024 + 1));
    const open = () => readdirSync('/proc/self/fd').length;
    const before = open();
    for (let i = 0; i < 20; i++) {
      nodeLlamaCppRelease(read);
      nodeLlamaCppRelease(big);
    }
    expect(open()).toBe(before);
  });

  it('a library unloaded and loaded again at the same path (a rebuilt plugin) is read again, not from the last scan', () => {
    const file = path.join(folder('rebuilt'), 'libggml-metal.so');
    const build = (v: string) => {
      rmSync(file, { force: true });
      writeFileSync(`${file}.c`, version(v));
      execFileSync('clang-14', ['-shared', '-fPIC', `${file}.c`, '-o', file]);
    };
    const versions = () =>
      status()
        .llamaCpp.filter((l) => l.image === file)
        .map((l) => l.ggmlVersion);
    const fixture = loadFixture();
    build('0.9.1');
    fixture.openLibrary(file);
    expect(versions()).toEqual(['0.9.1']);
    fixture.closeLibrary(file);
    build('0.9.2');
    fixture.openLibrary(file);
    try {
      // The same list of image paths as at the last scan: only the count of loads tells them apart.
      expect(versions()).toEqual(['0.9.2']);
    } finally {
      fixture.closeLibrary(file);
    }
    expect(versions()).toEqual([]);
  });
});
