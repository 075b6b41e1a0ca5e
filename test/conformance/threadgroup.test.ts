// What llama.cpp does with the answered threadgroup memory, against each node-llama-cpp tarball's own source
// (lib/engines/llama-cpp-threadgroup.ts): v0.4.0's and v0.5.0's flash-attention configuration choice (fa_vec_pick of
// ggml-metal-tuning.cpp, compiled from the tarball with src/fa-vec-wide.cpp and run over every chip, family, KV type,
// KV length and batch) equals FA_VEC_WIDE_Q4_ROWS; and the lines that read maxThreadgroupMemoryLength in each era's
// ggml-metal sources are the ones the models restate, so a release that reads it elsewhere fails here.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { FA_VEC_WIDE_Q4_ROWS, readWideRow } from '../../lib/engines/llama-cpp-threadgroup.js';
import { LLAMA_CPP_RULE_SET_INFO, parseRelease, ruleSetForRelease } from '../../lib/engines/index.js';
import { archiveTree, fetchTarball } from './build.mjs';
import { ERAS } from './eras.mjs';
import { OLDER_SOURCES } from '../../scripts/build/llama-bench-eras.mjs';

const run = promisify(execFile);
const here = path.dirname(new URL(import.meta.url).pathname);
const work = mkdtempSync(path.join(tmpdir(), 'mcs-threadgroup-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The era's ggml-metal sources and headers, taken out of its tarball's bundle. */
async function sourcesOf(id: string): Promise<string> {
  const era = [...ERAS, ...OLDER_SOURCES].find((e) => e.id === id)!;
  const tgz = await fetchTarball(era.package, era.integrity);
  const dir = path.join(work, id);
  // node-llama-cpp 2.8.16 (b3658) names its release in another file than llama.cpp.info.json: the bundle alone.
  const clone = mkdtempSync(path.join(work, `${id}-clone-`));
  await run('tar', ['-xzf', tgz, '-C', clone, 'package/llama/gitRelease.bundle']);
  const repo = path.join(clone, 'repo.git');
  await run('git', ['clone', '--quiet', '--bare', path.join(clone, 'package/llama/gitRelease.bundle'), repo]);
  // b3658's ggml-metal.m sits in ggml/src itself.
  await archiveTree(repo, dir, ['ggml/include', id === 'b3658' ? 'ggml/src/ggml-metal.m' : 'ggml/src/ggml-metal']);
  return dir;
}

const metal = (dir: string, file: string) =>
  readFileSync(
    path.join(dir, 'ggml/src', file === 'ggml-metal.m' && dir.endsWith('b3658') ? '' : 'ggml-metal', file),
    'utf8',
  );

/** The code lines (comments and printf's left out) that name the device's threadgroup memory. */
function readsOf(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => /max_theadgroup_memory_size|maxThreadgroupMemoryLength/.test(l) && !l.startsWith('//'));
}

const KV_TYPES: Record<number, string> = { 1: 'F16', 2: 'Q4_0', 3: 'Q4_1', 6: 'Q5_0', 7: 'Q5_1', 8: 'Q8_0' };
const CHIP_TOKENS = [
  'GENERIC',
  'M1',
  'M1_PRO',
  'M1_MAX',
  'M1_ULTRA',
  'M2',
  'M2_PRO',
  'M2_MAX',
  'M2_ULTRA',
  'M3',
  'M3_PRO',
  'M3_MAX',
  'M3_ULTRA',
  'M4',
  'M4_PRO',
  'M4_MAX',
  'M5',
  'M5_PRO',
  'M5_MAX',
  'M5_ULTRA',
  'A18_PRO',
];

/** fa_vec_pick's Q=4 choices at heads 512/576, as `<key> <KV type> <dk>/<dv> kv<ne11> <ne01>` lines, sorted. */
async function compiledChoices(dir: string, byChip: boolean): Promise<string[]> {
  const exe = path.join(dir, 'fa-vec-wide');
  await run('clang++-19', [
    '-std=c++17',
    '-O1',
    ...(byChip ? ['-DMCS_TUNING_BY_CHIP'] : []),
    `-I${path.join(dir, 'ggml/include')}`,
    `-I${path.join(dir, 'ggml/src/ggml-metal')}`,
    path.join(here, 'src', 'fa-vec-wide.cpp'),
    '-o',
    exe,
  ]);
  const { stdout } = await run(exe, [], { maxBuffer: 16 << 20 });
  const lines = stdout
    .trim()
    .split('\n')
    .map((l) => l.split(' ').map(Number) as [number, number, number, number, number, number, number])
    // v0.4.0 by chip: the family only picks a representative (Apple9's M4 Max), so each chip under every family.
    .map(([device, family, dtype, dk, dv, ne11, ne01]) => {
      const key = byChip ? `GGML_METAL_DEVICE_${CHIP_TOKENS[device]}@${family}` : String(family);
      return `${key} ${KV_TYPES[dtype]} ${dk}/${dv} kv${ne11} ${ne01}`;
    });
  return [...new Set(lines)].sort();
}

/** The same lines from FA_VEC_WIDE_Q4_ROWS: batch bucket 5 stands for 5 to 19 rows. */
function predictedChoices(byChip: boolean): string[] {
  const table = FA_VEC_WIDE_Q4_ROWS[byChip ? 'chip' : 'family'];
  const out: string[] = [];
  for (const [key, rows] of Object.entries(table)) {
    const keys = byChip ? Array.from({ length: 13 }, (_, f) => `${key}@${f}`) : [key];
    for (const k of keys)
      for (const row of rows) {
        const r = readWideRow(row);
        const batches = r.rows.flatMap((b) => (b === 5 ? Array.from({ length: 15 }, (_, i) => 5 + i) : [b]));
        for (const b of batches) out.push(`${k} ${r.kvType} ${r.dk}/${r.dv} kv${r.kv} ${b}`);
      }
  }
  return out.sort();
}

describe('v0.4.0 and v0.5.0: the tuned configuration and its fallback', () => {
  it.each([
    ['v0.4.0', true],
    ['v0.5.0', false],
  ] as const)(
    '%s: fa_vec_pick picks Q=4 at heads 512/576 exactly where FA_VEC_WIDE_Q4_ROWS says',
    async (id, byChip) => {
      const dir = await sourcesOf(id);
      expect(await compiledChoices(dir, byChip)).toEqual(predictedChoices(byChip));
      // The vec kernel's FATTN_SMEM and its fallback, as vecKernelBytes and predictThreadgroup restate them.
      const ops = metal(dir, 'ggml-metal-ops.cpp');
      expect(ops).toContain(
        '#define FATTN_SMEM(nsg) (GGML_PAD(((GGML_PAD(ne00, 128) + 4*ncpsg + 2*GGML_PAD(ne20, 128))*(nsg)*nqptg)*(sizeof(float)/2), 16))',
      );
      expect(ops).toMatch(
        /while \(2\*nwg\*nsg\*ncpsg < ne11 && nsg < 4\) \{\s+nsg \*= 2;\s+\}\s+\}\s+\/\/ fall back to baseline \(Q=1\) if the tuned config exceeds threadgroup memory\s+if \(\(size_t\) FATTN_SMEM\(nsg\) > props_dev->max_theadgroup_memory_size\) \{\s+cfg\s+= ggml_metal_tuning::fa_vec_baseline_cfg/,
      );
      expect(readsOf(ops)).toEqual([
        'GGML_ASSERT(pipeline.smem <= props_dev->max_theadgroup_memory_size);',
        ...(id === 'v0.5.0' ? ['GGML_ASSERT(smem <= props_dev->max_theadgroup_memory_size);'] : []),
        'GGML_ASSERT(smem <= props_dev->max_theadgroup_memory_size);',
        'if ((size_t) FATTN_SMEM(nsg) > props_dev->max_theadgroup_memory_size) {',
        'GGML_ASSERT(smem <= props_dev->max_theadgroup_memory_size);',
      ]);
      expect(LLAMA_CPP_RULE_SET_INFO[ruleSetForRelease(parseRelease(id)!).ruleSet].threadgroup).toBe(
        byChip ? 'vec-fallback-chip' : 'vec-fallback-family',
      );
    },
    600_000,
  );
});

describe('b6673 to b10361: the claim is read only by asserts', () => {
  it.each(['b6673', 'b7347', 'b8390', 'b10361'])(
    '%s',
    async (id) => {
      const ops = metal(await sourcesOf(id), 'ggml-metal-ops.cpp');
      const reads = readsOf(ops);
      // b6673 and b7347 size an nsgmax from half the claim, then set nsg anew for the 32 workgroups.
      const halfClaim = 'if (smem > props_dev->max_theadgroup_memory_size/2) {';
      expect(reads.filter((l) => l !== halfClaim).every((l) => l.startsWith('GGML_ASSERT('))).toBe(true);
      if (reads.includes(halfClaim)) {
        expect(ops).toMatch(/nwg = 32;\s+nsg = 1;\s+while \(2\*nwg\*nsg\*nkpsg < ne11 && nsg < 4\)/);
      }
      expect(LLAMA_CPP_RULE_SET_INFO[ruleSetForRelease(parseRelease(id)!).ruleSet].threadgroup).toBe('asserts');
    },
    600_000,
  );
});

describe('b3658 (ggml-metal.m): the half8x8 nsgmax and dst_rows_max from the claim', () => {
  it('its reads are the ones the ggml-metal-m-b3658 model restates', async () => {
    const m = metal(await sourcesOf('b3658'), 'ggml-metal.m');
    expect(readsOf(m)).toEqual([
      'const int dst_rows_max = (ctx->device.maxThreadgroupMemoryLength - 32 - 8192)/4;',
      'if (smem > ctx->device.maxThreadgroupMemoryLength) {',
      'GGML_ASSERT(smem <= ctx->device.maxThreadgroupMemoryLength);',
      'GGML_ASSERT(smem <= ctx->device.maxThreadgroupMemoryLength);',
    ]);
    expect(m).toContain('const size_t smem = nqptg*(ne00 + 2*nsgmax*(ncpsg + nqptg))*(sizeof(float)/2);');
    expect(m).toContain(
      'const int64_t nsg = ne01 <= nqptg ? MAX(4, MIN(nsgmax, MIN(ne11/ncpsg, (int64_t) pipeline.maxTotalThreadsPerThreadgroup/32))) : 4;',
    );
    expect(m).toContain(
      'const int64_t nsgt = MAX(2, MIN(ne11/ncpsg, (int64_t) pipeline.maxTotalThreadsPerThreadgroup/32));',
    );
    expect(m).toContain(
      '//case 256: pipeline = ctx->kernels[GGML_METAL_KERNEL_TYPE_FLASH_ATTN_EXT_F16_H256].pipeline; break;',
    );
    expect(ruleSetForRelease(parseRelease('b3658')!).ruleSet).toBe('legacy-b1853');
    expect(LLAMA_CPP_RULE_SET_INFO['legacy-b1853'].threadgroup).toBe('ggml-metal-m-b3658');
  }, 600_000);
});

describe('b4753 (ggml-metal.m): nsgmax and dst_rows_max from the claim', () => {
  it('its reads are the ones the ggml-metal-m model restates', async () => {
    const m = metal(await sourcesOf('b4753'), 'ggml-metal.m');
    expect(readsOf(m)).toEqual([
      'const int dst_rows_max = (device.maxThreadgroupMemoryLength - 32 - 8192)/4;',
      'if (smem > device.maxThreadgroupMemoryLength) {',
      'GGML_ASSERT(smem <= device.maxThreadgroupMemoryLength);',
      'if (smem > device.maxThreadgroupMemoryLength) {',
      'GGML_ASSERT(smem <= device.maxThreadgroupMemoryLength);',
    ]);
    expect(m).toContain(
      '[encoder setThreadgroupMemoryLength:GGML_PAD(8192 + dst_rows*4/*sizeof(ushort2)*/, 16) atIndex:0];',
    );
    expect(m).toContain(
      '#define FATTN_SMEM(nsg) (GGML_PAD((nqptg*(ne00 + 2*(2*ncpsg + nqptg)*(nsg)) + 16*32*(nsg))*(sizeof(float)/2), 16))',
    );
    expect(m).toContain(
      'const int64_t nsg = ne01 <= nqptg ? MAX(4, MIN(nsgmax, MIN(ne11/ncpsg, (int64_t) pipeline.maxTotalThreadsPerThreadgroup/32))) : 4;',
    );
    expect(m).toContain(
      '#define FATTN_SMEM(nsg) (GGML_PAD((nqptg*(ne00 + 2*ncpsg*(nsg)) + ne00*(nsg))*(sizeof(float)/2), 16))',
    );
    expect(m).toContain('if (ne01 >= 4 || (ne00%128 != 0)) {');
    expect(LLAMA_CPP_RULE_SET_INFO.legacy.threadgroup).toBe('ggml-metal-m');
  }, 600_000);
});
