// The doctor's MSL kernels (src-native/doctor/doctor_kernels.h), checked on Linux: each R"MSL(...)MSL" block is compiled
// as C++ with clang++-14 -fsyntax-only against test/msl/ (declarations of the MSL subset they use), at the language
// version its entry names; attribute names are checked against MSL's list first. This catches a misspelt function,
// a wrong argument, an unknown attribute or bfloat used below MSL 3.1. It cannot tell whether Metal's compiler
// accepts the kernel or what a GPU computes: only the live suite on a Mac (test/live/) can.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { root } from '../support/helpers.js';

interface Kernel {
  constant: string;
  fn: string;
  metalVersion: number;
  source: string;
}

const kernelsHeader = readFileSync(path.join(root, 'src-native', 'doctor', 'doctor_kernels.h'), 'utf8');

/** kMsl2_3 = 0x20003 → 230, as Metal's compiler sets __METAL_VERSION__. */
const versions = new Map(
  [...kernelsHeader.matchAll(/inline constexpr unsigned long (kMsl\w+) = 0x([0-9a-f]+);/g)].map(([, name, hex]) => {
    const v = Number.parseInt(hex!, 16);
    return [name!, Math.floor(v / 0x10000) * 100 + (v % 0x10000) * 10];
  }),
);

/** Sources shared by several entries (a template instantiated once per entry), by name. */
const sources = new Map(
  [...kernelsHeader.matchAll(/inline constexpr char (\w+)\[\] = R"MSL\(([\s\S]*?)\)MSL";/g)].map(([, name, text]) => [
    name!,
    text!,
  ]),
);

const kernels: Kernel[] = [
  ...kernelsHeader.matchAll(
    /inline constexpr DoctorKernel (\w+) = \{"(\w+)", (kMsl\w+), (?:R"MSL\(([\s\S]*?)\)MSL"|(\w+))\};/g,
  ),
].map(([, constant, fn, version, inline, shared]) => ({
  constant: constant!,
  fn: fn!,
  metalVersion: versions.get(version!)!,
  source: inline ?? sources.get(shared!)!,
}));

/**
 * The functions a source exports, as Metal's compiler names them: each non-template `kernel void NAME(`, and each
 * explicit instantiation's [[host_name("NAME")]] (the simulated compiler reads them the same way).
 */
function exportedNames(source: string): string[] {
  const plain = [...source.matchAll(/(\S?)\s*kernel void (\w+)\(/g)].filter((m) => m[1] !== '>').map((m) => m[2]!);
  return [...plain, ...[...source.matchAll(/\[\[host_name\("(\w+)"\)\]\]/g)].map((m) => m[1]!)];
}

/** MSL's attributes for kernel arguments; the indexed ones take one integer. */
const INDEXED = ['buffer', 'threadgroup', 'texture', 'sampler'];
const BUILTINS = [
  'thread_position_in_grid',
  'thread_position_in_threadgroup',
  'thread_index_in_threadgroup',
  'threadgroup_position_in_grid',
  'threads_per_threadgroup',
  'threadgroups_per_grid',
  'threads_per_grid',
  'thread_index_in_simdgroup',
  'simdgroup_index_in_threadgroup',
  'threads_per_simdgroup',
  'simdgroups_per_threadgroup',
  'thread_execution_width',
];

/** Checks attribute names and strips them; problems are returned, not thrown. */
function stripAttributes(source: string): { code: string; problems: string[]; buffers: number[] } {
  const problems: string[] = [];
  const buffers: number[] = [];
  const code = source.replace(/\[\[([^\]]*)\]\]/g, (_all, inner: string) => {
    const m = /^\s*([A-Za-z_]+)\s*(?:\(\s*(\d+)\s*\))?\s*$/.exec(inner);
    // An explicit instantiation's name for the host: the one attribute with a string.
    if (/^host_name\("\w+"\)$/.test(inner)) return '';
    if (!m) {
      problems.push(`malformed attribute [[${inner}]]`);
    } else if (m[2] !== undefined ? !INDEXED.includes(m[1]!) : !BUILTINS.includes(m[1]!)) {
      problems.push(`unknown attribute [[${inner}]]`);
    } else if (m[1] === 'buffer') {
      buffers.push(Number(m[2]));
    }
    return '';
  });
  if (source.includes('[[') !== /\[\[[^\]]*\]\]/.test(source)) problems.push('unbalanced [[');
  return { code, problems, buffers };
}

function compileAsCxx(code: string, metalVersion: number): { ok: boolean; stderr: string } {
  const r = spawnSync(
    'clang++-14',
    [
      '-fsyntax-only',
      '-std=c++17',
      '-x',
      'c++',
      '-Wall',
      '-Werror',
      '-nostdinc',
      '-nostdinc++',
      `-I${path.join(root, 'test', 'msl')}`,
      `-D__METAL_VERSION__=${metalVersion}`,
      '-',
    ],
    { input: code, encoding: 'utf8' },
  );
  return { ok: r.status === 0, stderr: r.stderr };
}

function check(source: string, metalVersion: number): string[] {
  const { code, problems } = stripAttributes(source);
  if (problems.length > 0) return problems;
  const compiled = compileAsCxx(code, metalVersion);
  return compiled.ok ? [] : compiled.stderr.split('\n').filter((l) => l.includes('error:'));
}

describe('the doctor’s MSL kernels, syntax-checked as C++', () => {
  it('finds every kernel of doctor_kernels.h, each with a known language version', () => {
    expect(kernels.map((k) => [k.fn, k.metalVersion])).toEqual([
      ['mcs_doctor_simd_reduce', 230],
      ['mcs_doctor_matmul_f32', 230],
      ['mcs_doctor_matmul_f16', 230],
      ['mcs_doctor_bfloat', 310],
      ['mcs_doctor_threadgroup', 230],
      ['mcs_doctor_block_checksum', 230],
      ['mcs_doctor_resident_read', 230],
      ['mcs_doctor_heap_write', 230],
      ['mcs_doctor_heap_read', 230],
    ]);
  });

  it.each(kernels.map((k) => [k.fn, k] as const))('%s compiles at its language version', (_fn, k) => {
    expect(check(k.source, k.metalVersion)).toEqual([]);
  });

  it.each(kernels.map((k) => [k.fn, k] as const))(
    '%s defines the function its entry names, with buffers 0, 1, … in order',
    (_fn, k) => {
      // A shared source (a template, or one library of several kernels) exports exactly the functions of the
      // entries that use it.
      expect(exportedNames(k.source)).toEqual(kernels.filter((x) => x.source === k.source).map((x) => x.fn));
      // The runners bind buffers at indices 0, 1, … (DispatchSpec in doctor_gpu.h), each kernel of the source its own.
      const perKernel = k.source
        .split(/(?=kernel void )/)
        .slice(1)
        .map((part) => stripAttributes(part).buffers);
      expect(perKernel.map((buffers) => buffers.length > 0)).toEqual(perKernel.map(() => true));
      expect(perKernel).toEqual(perKernel.map((buffers) => buffers.map((_, i) => i)));
    },
  );

  it('the simulated GPU implements exactly these kernels, none above the version the kernel is compiled with', () => {
    const sim = readFileSync(path.join(root, 'test', 'sim-metal', 'src', 'SimCompute.mm'), 'utf8');
    const table = [...sim.matchAll(/\{"(mcs_doctor_\w+)", Probe::\w+, 0x([0-9a-f]+), \w+(?:<\w+>)?\}/g)].map(
      ([, fn, hex]) => {
        const v = Number.parseInt(hex!, 16);
        return [fn!, Math.floor(v / 0x10000) * 100 + (v % 0x10000) * 10] as const;
      },
    );
    expect(table.map(([fn]) => fn).sort()).toEqual(kernels.map((k) => k.fn).sort());
    for (const [fn, minimum] of table) {
      expect(minimum).toBeLessThanOrEqual(kernels.find((k) => k.fn === fn)!.metalVersion);
    }
  });

  describe('the check itself fails on what it is there to catch', () => {
    const reduce = kernels.find((k) => k.fn === 'mcs_doctor_simd_reduce')!;
    const bfloat = kernels.find((k) => k.fn === 'mcs_doctor_bfloat')!;
    const matmul = kernels.find((k) => k.fn === 'mcs_doctor_matmul_f32')!;

    it('a misspelt function', () => {
      const errors = check(reduce.source.replace('simd_sum(value)', 'simd_summ(value)'), 230);
      expect(errors).toHaveLength(1);
      expect(errors[0]).toContain("use of undeclared identifier 'simd_summ'");
    });

    it('an unknown attribute', () => {
      expect(check(reduce.source.replace('[[thread_position_in_grid]]', '[[thread_position_in_grit]]'), 230)).toEqual([
        'unknown attribute [[thread_position_in_grit]]',
      ]);
    });

    it('bfloat below MSL 3.1, SIMD-group matrices below MSL 2.3', () => {
      expect(check(bfloat.source, 300).join('\n')).toContain("use of undeclared identifier 'bfloat'");
      expect(check(matmul.source, 220).join('\n')).toContain("no template named 'simdgroup_matrix'");
    });

    it('a wrong argument count', () => {
      const errors = check(
        matmul.source.replace(
          'simdgroup_multiply_accumulate(acc, ma, mb, acc)',
          'simdgroup_multiply_accumulate(acc, ma, mb)',
        ),
        230,
      );
      expect(errors.join('\n')).toContain("no matching function for call to 'simdgroup_multiply_accumulate'");
    });
  });
});
