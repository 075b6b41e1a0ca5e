// Static checks of node-llama-cpp's real macOS binaries (@node-llama-cpp/mac-arm64-metal, Mach-O), read with llvm's
// tools: the devices ggml-metal obtains come through the functions exec's injector interposes, its image and
// exported symbols are what the consumer scan looks for, every selector the shim hooks is one it sends, and the SDK
// it was built with decides whether its residency switch exists. Skipped off Linux (it reads the injector's Linux
// build and applies over the simulated Metal, which only the Linux build has) and where llvm-nm-19 or
// llvm-objdump-19 is missing; the skipped test's name says which. The hooked selectors are the native engine's own
// (status() after an apply over the simulated stock Tahoe guest).
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { restore, status } from '../../lib/patch/apply.js';
import { applyProfile } from '../../lib/select/auto.js';
import {
  LLAMA_CPP_GENERATION_MARKERS,
  parseRelease,
  ruleSetForRelease,
  rulesOfLoaded,
} from '../../lib/engines/index.js';
import { nodeLlamaCppRelease } from '../../lib/engines/loaded-llama.js';
import { requireSimBuild, root } from '../support/helpers.js';
import { useSimulation } from '../support/simulation.js';
import { fetchBinaries } from './build.mjs';
import { ERAS } from './eras.mjs';

const TOOLS = ['llvm-nm-19', 'llvm-objdump-19'];
const missing = TOOLS.filter((tool) => {
  try {
    execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    return false;
  } catch {
    return true;
  }
});

const tool = (name: string, args: string[]) => execFileSync(name, args, { encoding: 'utf8', maxBuffer: 64 << 20 });
/** Symbols a Mach-O image imports (`llvm-nm -u`) or defines and exports (`-gU`), without Mach-O's leading underscore. */
const stripped = (symbols: string[]) => symbols.map((s) => s.replace(/^_/, ''));
/**
 * What each of `files` imports: one llvm-nm for all of them (each start of an llvm tool costs a tenth of a second),
 * whose output heads each file's list with "<file>:".
 */
function importsOf(files: string[]): Map<string, string[]> {
  const out = new Map(files.map((f) => [f, [] as string[]]));
  if (files.length === 0) return out;
  let current: string[] | undefined = files.length === 1 ? out.get(files[0]!) : undefined;
  for (const line of tool('llvm-nm-19', ['-u', ...files]).split('\n')) {
    const trimmed = line.trim();
    if (trimmed === '') continue;
    if (files.length > 1 && trimmed.endsWith(':') && out.has(trimmed.slice(0, -1))) {
      current = out.get(trimmed.slice(0, -1));
      continue;
    }
    current?.push(trimmed);
  }
  for (const [f, symbols] of out) out.set(f, stripped(symbols));
  return out;
}
/** Symbols an image defines and exports, as llvm-nm names them (Mach-O's with their leading underscore). */
const defined = (file: string) =>
  tool('llvm-nm-19', ['-gU', file])
    .split('\n')
    .map((l) => l.trim().split(/\s+/)[2])
    .filter((s): s is string => s !== undefined);
const exportsOf = (file: string) => stripped(defined(file));
const methodNames = (file: string) =>
  tool('llvm-objdump-19', ['--macho', `--section=__TEXT,__objc_methname`, file])
    .split('\n')
    .map((l) => /^[0-9a-f]+\s+(\S+)$/.exec(l.trim())?.[1])
    .filter((s): s is string => s !== undefined);
const sdkOf = (file: string) =>
  /LC_BUILD_VERSION[\s\S]*?\bsdk (\S+)/.exec(tool('llvm-objdump-19', ['--macho', '--private-headers', file]))?.[1] ??
  null;
const isMachO = (file: string) => readFileSync(file).readUInt32LE(0) === 0xfeedfacf;

/** What the consumer scan (src-native/addon/consumers.mm) looks for: image name prefixes and ggml-metal symbols. */
function scanTargets(): { imagePrefixes: string[]; ggmlMetalSymbols: string[] } {
  const source = readFileSync(path.join(root, 'src-native', 'addon', 'consumers.mm'), 'utf8');
  const list = (name: string) =>
    /\{([^}]*)\}/
      .exec(source.slice(source.indexOf(name)))![1]!
      .match(/"[^"]+"/g)!
      .map((s) => JSON.parse(s) as string);
  return { imagePrefixes: list('kConsumerImagePrefixes'), ggmlMetalSymbols: list('kGgmlMetalSymbols') };
}

/** The device functions exec's injector defines in place of Metal's: the MTL* functions its Linux build exports. */
let interposedOnce: string[] | undefined;
function interposed(): string[] {
  interposedOnce ??= defined(path.join(root, 'build', 'Release', 'libmetal_cap_shim_inject.so'))
    .filter((s) => s.startsWith('MTL'))
    .sort();
  return interposedOnce;
}

/** The SDK each binary was built with, and so whether its residency switch exists (read once from the binaries). */
const BUILT_WITH: Record<string, { sdk: string; readsSwitch: boolean }> = {
  b4753: { sdk: '14.5', readsSwitch: false },
  b8390: { sdk: '26.2', readsSwitch: true },
  b10361: { sdk: '26.5', readsSwitch: true },
  'v0.4.0': { sdk: '26.5', readsSwitch: true },
};

const withBinaries = ERAS.filter((e) => e.binaries !== null);

/** Why the checks cannot run here, or null: off Linux first, then the missing tools. */
const skipReason =
  process.platform !== 'linux'
    ? `runs on Linux only (it reads the injector's Linux build and applies over the simulated Metal); this is ${process.platform}`
    : missing.length > 0
      ? `needs ${missing.join(' and ')} (apt-get install llvm-19)`
      : null;

describe.skipIf(skipReason !== null)(`node-llama-cpp's Mach-O binaries, read with ${TOOLS.join(' and ')}`, () => {
  useSimulation('vz-guest-m1-ultra-tahoe-stock');
  const dirs = new Map<string, string>();
  let hooked: string[] = [];

  beforeAll(async () => {
    requireSimBuild();
    for (const era of withBinaries) dirs.set(era.id, (await fetchBinaries(era))!);
    // Every selector the engine can hook: a profile that sets each answer it can change.
    const applied = applyProfile({
      appleFamilyMax: 1009,
      maxThreadgroupMemoryLength: 65536,
      recommendedMaxWorkingSetSize: 2 ** 34,
      deviceName: 'Apple M1',
    });
    expect(applied.applied).toBe(true);
    hooked = [...new Set(status().hooks.map((h) => h.selector))].sort();
    restore();
  }, 300_000);

  it('the injector interposes the two functions that hand out devices, and the shim hooks four selectors', () => {
    expect(interposed()).toEqual(['MTLCopyAllDevices', 'MTLCreateSystemDefaultDevice']);
    expect(hooked).toEqual(['maxThreadgroupMemoryLength', 'name', 'recommendedMaxWorkingSetSize', 'supportsFamily:']);
  });

  for (const era of withBinaries) {
    describe(`${era.binaries!.package} (llama.cpp ${era.id})`, () => {
      const file = (name: string) => path.join(dirs.get(era.id)!, name);

      it('every image that asks Metal for a device asks through the interposed functions, and ggml-metal is one', () => {
        const images = readdirSync(dirs.get(era.id)!).filter((name) => isMachO(file(name)));
        const imported = importsOf(images.map(file));
        const askers = images
          .map((name) => ({
            name,
            calls: imported
              .get(file(name))!
              .filter((s) => /^MTL\w*Device/.test(s))
              .sort(),
          }))
          .filter((i) => i.calls.length > 0);
        expect(askers).toEqual([
          { name: 'libggml-metal.so', calls: ['MTLCopyAllDevices', 'MTLCreateSystemDefaultDevice'] },
        ]);
        for (const asker of askers) for (const call of asker.calls) expect(interposed()).toContain(call);
      });

      it("its image name and exports are what the consumer scan looks for, and they decide the release's rules", () => {
        const { imagePrefixes, ggmlMetalSymbols } = scanTargets();
        const images = readdirSync(dirs.get(era.id)!).filter((name) => imagePrefixes.some((p) => name.startsWith(p)));
        expect(images).toEqual(['libggml-metal.so']);
        const exported = exportsOf(file('libggml-metal.so'));
        for (const symbol of ggmlMetalSymbols) expect(exported).toContain(symbol);
        const markers = LLAMA_CPP_GENERATION_MARKERS.flatMap((m) => m.symbols).filter((s) => exported.includes(s));
        const release = nodeLlamaCppRelease(dirs.get(era.id)!);
        expect(release).toBe(era.id);
        const loaded = rulesOfLoaded({
          image: file('libggml-metal.so'),
          ggmlVersion: null,
          markers,
          nodeLlamaCppRelease: release,
        });
        expect({ ruleSet: loaded.ruleSet, release: loaded.release }).toEqual({
          ruleSet: ruleSetForRelease(parseRelease(era.id)!).ruleSet,
          release: era.id,
        });
      });

      it('ggml_version() is exported by libggml-base, which libggml-metal loads, where its ggml has one', () => {
        const base = exportsOf(file('libggml-base.dylib')).includes('ggml_version');
        const dylibs = tool('llvm-objdump-19', ['--macho', '--dylibs-used', file('libggml-metal.so')]);
        expect({ base, linked: dylibs.includes('@rpath/libggml-base.dylib') }).toEqual({
          base: era.kind === 'device',
          linked: true,
        });
      });

      it('every selector the shim hooks is one ggml-metal sends', () => {
        const sent = methodNames(file('libggml-metal.so'));
        expect(hooked.filter((s) => !sent.includes(s))).toEqual([]);
      });

      it('the SDK it was built with decides whether GGML_METAL_NO_RESIDENCY exists in it: only from SDK 15', () => {
        const sdk = sdkOf(file('libggml-metal.so'));
        const readsSwitch = readFileSync(file('libggml-metal.so')).includes(Buffer.from('GGML_METAL_NO_RESIDENCY\0'));
        expect({ sdk, readsSwitch }).toEqual(BUILT_WITH[era.id]);
        expect(readsSwitch).toBe(Number(sdk!.split('.')[0]) >= 15);
      });
    });
  }
});

if (skipReason !== null) {
  describe("node-llama-cpp's Mach-O binaries", () => {
    it.skip(skipReason, () => {});
  });
}
