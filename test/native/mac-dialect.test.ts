// The Linux test build compiles src-native/ in the C++ dialect node-gyp uses on a Mac, derived from Node's own
// common.gypi and binding.gyp (scripts/build/mac-dialect.mjs), so a construct that cannot build on a Mac fails here
// too. build-sim.mjs records every compile line it used in build/sim-flags.json; these tests read that record.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, expect, it } from 'vitest';
import { describeSim, requireSimBuild, root } from '../support/helpers.js';

interface Dialect {
  target: string;
  flags: string[];
  gnuRuntime: string[];
  skipped: string[];
  commonGypi: string;
}
interface FlagsRecord {
  commonGypi: string;
  dialects: Record<'addon' | 'inject', Omit<Dialect, 'commonGypi'>>;
  targets: Record<string, Record<string, string[]>>;
}
interface DialectModule {
  macDialect(target: string, files?: { commonGypi?: string; bindingGyp?: string }): Dialect;
  parseGyp(text: string): unknown;
  evalCondition(expression: string, vars: Record<string, string | number>): boolean;
}

let record: FlagsRecord;
let dialect: DialectModule;

/**
 * What a compile line says about the language: the last word on each switch counts, as for the driver. What goes to
 * the compiler proper (`-Xclang X`) is not a driver switch: `-Xclang -fexceptions` gives unwind tables, not C++ `try`.
 */
function languageOf(line: string[]) {
  const argv = line.filter((a, i) => a !== '-Xclang' && line[i - 1] !== '-Xclang');
  const last = (on: string, off: string) => {
    const i = Math.max(argv.lastIndexOf(on), argv.lastIndexOf(off));
    return i < 0 ? null : argv[i] === on;
  };
  return {
    std: [...argv].reverse().find((a) => a.startsWith('-std=')) ?? null,
    cxxExceptions: last('-fexceptions', '-fno-exceptions'),
    rtti: last('-frtti', '-fno-rtti'),
    strictAliasing: last('-fstrict-aliasing', '-fno-strict-aliasing'),
    objcExceptions: argv.includes('-fobjc-exceptions'),
    exitTimeDestructorsAreErrors: argv.includes('-Werror=exit-time-destructors'),
  };
}

const MAC = {
  std: '-std=c++17',
  cxxExceptions: false,
  rtti: false,
  strictAliasing: false,
  objcExceptions: true,
  exitTimeDestructorsAreErrors: true,
};

describeSim('the simulated build compiles src-native/ in the Mac dialect', () => {
  beforeAll(async () => {
    requireSimBuild();
    record = JSON.parse(readFileSync(path.join(root, 'build', 'sim-flags.json'), 'utf8')) as FlagsRecord;
    dialect = (await import(
      pathToFileURL(path.join(root, 'scripts', 'build', 'mac-dialect.mjs')).href
    )) as DialectModule;
  });

  it('every src-native file of the addon and the injector was compiled with -fno-exceptions, -fno-rtti, -fno-strict-aliasing and the target’s switches', () => {
    for (const target of ['addon', 'inject']) {
      const lines = Object.entries(record.targets[target] ?? {}).filter(([source]) => source.startsWith('src-native/'));
      expect(lines.length).toBeGreaterThan(3);
      const seen = Object.fromEntries(lines.map(([source, argv]) => [source, languageOf(argv)]));
      expect(seen).toEqual(Object.fromEntries(lines.map(([source]) => [source, MAC])));
    }
  });

  it('test code keeps its own flags: the simulated Metal is not compiled in the Mac dialect', () => {
    const argv = record.targets['sim-metal']?.['test/sim-metal/src/SimCompute.mm'] ?? [];
    expect(languageOf(argv).cxxExceptions).toBe(null);
    expect(argv.includes('-fno-rtti')).toBe(false);
  });

  it('the flags are what Node’s common.gypi and binding.gyp give each target, not a copy of them', () => {
    expect(readFileSync(record.commonGypi, 'utf8')).toMatch(/'GCC_ENABLE_CPP_EXCEPTIONS':\s*'NO'/);
    for (const [name, gypName] of [
      ['addon', 'metal_cap_shim'],
      ['inject', 'metal_cap_shim_inject'],
    ] as const) {
      const derived = dialect.macDialect(gypName, { commonGypi: record.commonGypi });
      expect(record.dialects[name]).toEqual({
        target: gypName,
        flags: derived.flags,
        gnuRuntime: derived.gnuRuntime,
        skipped: derived.skipped,
      });
    }
  });

  it('a target that turns exceptions and RTTI back on in its xcode_settings gets them back', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'mcs-dialect-'));
    const gyp = path.join(dir, 'binding.gyp');
    writeFileSync(
      gyp,
      `# a comment\n{ 'targets': [ { 'target_name': 't', 'conditions': [ ["OS=='mac'", { 'xcode_settings': {\n` +
        `  'GCC_ENABLE_CPP_EXCEPTIONS': 'YES', 'GCC_ENABLE_CPP_RTTI': 'YES', 'OTHER_CFLAGS': ['-arch', 'arm64', '-DX=1'] } }] ] } ] }\n`,
    );
    const d = dialect.macDialect('t', { commonGypi: record.commonGypi, bindingGyp: gyp });
    expect(languageOf(d.flags)).toEqual({
      ...MAC,
      std: '-std=gnu++17',
      cxxExceptions: null,
      rtti: null,
      objcExceptions: false,
      exitTimeDestructorsAreErrors: false,
    });
    expect(d.flags.includes('-DX=1')).toBe(true);
    expect(d.skipped.includes('-arch arm64')).toBe(true);
  });

  it('gyp conditions: ==, !=, in, not in, and, or, not, and unknown variables that select nothing', () => {
    const vars = { OS: 'mac', clang: 1 };
    const cases = [
      'OS=="mac"',
      'OS!="mac"',
      'OS in "linux mac"',
      'OS not in "linux win"',
      'OS=="mac" and clang==0',
      'OS=="win" or (clang==1)',
      'not OS=="mac"',
      'nope=="x"',
    ];
    expect(cases.map((c) => dialect.evalCondition(c, vars))).toEqual([
      true,
      false,
      true,
      true,
      false,
      true,
      false,
      false,
    ]);
  });

  it('a C++ try and a typeid in a src-native file fail to compile with the recorded flags, as on a Mac', () => {
    const argv = record.targets.addon?.['src-native/doctor/doctor.mm'] ?? [];
    const flags = argv.slice(0, argv.indexOf('-c'));
    const dir = mkdtempSync(path.join(tmpdir(), 'mcs-dialect-'));
    const source = path.join(dir, 'probe.mm');
    writeFileSync(
      source,
      '#include <typeinfo>\nint f(int x) { try { return x; } catch (...) { return 0; } }\nconst char *g(int x) { return typeid(x).name(); }\n',
    );
    const r = spawnSync('clang++-14', [...flags, '-fsyntax-only', source], { encoding: 'utf8' });
    const errors = r.stderr
      .split('\n')
      .filter((l) => l.includes('error:'))
      .map((l) => l.replace(/^.*error: /, ''));
    expect(errors).toEqual(["cannot use 'try' with exceptions disabled", 'use of typeid requires -frtti']);
  });
});
