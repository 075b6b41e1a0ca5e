// What llama.cpp does with the answered threadgroup memory (lib/engines/llama-cpp-threadgroup.ts): each model's
// boundaries from both sides, with the source line it restates. Every Apple GPU has 32768 bytes.
import { describe, expect, it } from 'vitest';
import {
  aboveHardware,
  configurationText,
  FA_VEC_WIDE_Q4_ROWS,
  predictThreadgroup,
  readWideRow,
  threadgroupChanges,
  vecKernelBytes,
  type ThreadgroupContext,
} from '../../lib/engines/llama-cpp-threadgroup.js';
import { parseRelease } from '../../lib/engines/llama-cpp-releases.js';

const ctx = (claim: number, over: Partial<ThreadgroupContext> = {}): ThreadgroupContext => ({
  claim,
  simdgroupMm: true,
  tuningKey: null,
  release: null,
  ...over,
});
const bytesOf = (model: Parameters<typeof predictThreadgroup>[0], c: ThreadgroupContext) =>
  predictThreadgroup(model, c).configurations.map((x) => [x.kernel, x.head, x.kvType, x.batch, x.kv, x.bytes]);

describe('ggml-metal.m (read at b4753): nsgmax and dst_rows_max sized from the claim', () => {
  it('on 32768 bytes: nsgmax 8 for the half8x8 kernel, 32 SIMD groups for vec, 6136 expert rows', () => {
    expect(bytesOf('ggml-metal-m', ctx(32768))).toEqual([
      ['FLASH_ATTN_EXT half8x8', '64/64', null, '1 to 8', '256 or more', 27648],
      ['FLASH_ATTN_EXT half8x8', '80/80', null, '1 to 8', '256 or more', 27904],
      ['FLASH_ATTN_EXT half8x8', '96/96', null, '1 to 8', '256 or more', 28160],
      ['FLASH_ATTN_EXT half8x8', '112/112', null, '1 to 8', '256 or more', 28416],
      ['FLASH_ATTN_EXT half8x8', '128/128', null, '4 to 8', '256 or more', 28672],
      ['FLASH_ATTN_EXT half8x8', '256/256', null, '4 to 8', '256 or more', 30720],
      ['FLASH_ATTN_EXT vec', '128/128', null, '1 to 3', '1024 or more', 12544],
      ['FLASH_ATTN_EXT vec', '256/256', null, '1 to 3', '1024 or more', 20992],
      ['MUL_MAT_ID mul_mm_id', null, null, 'up to 6136 expert rows', null, 32736],
    ]);
  });

  it('on 65536 bytes (cua-release): nsgmax 16, so batches of up to 8 rows ask 54272 to 57344 bytes; MUL_MAT_ID 65504', () => {
    const t = predictThreadgroup('ggml-metal-m', ctx(65536));
    expect(aboveHardware(t).map(configurationText)).toEqual([
      'FLASH_ATTN_EXT half8x8, head 64/64, batch 1 to 8, 512 or more KV entries: 54272 bytes',
      'FLASH_ATTN_EXT half8x8, head 80/80, batch 1 to 8, 512 or more KV entries: 54528 bytes',
      'FLASH_ATTN_EXT half8x8, head 96/96, batch 1 to 8, 512 or more KV entries: 54784 bytes',
      'FLASH_ATTN_EXT half8x8, head 112/112, batch 1 to 8, 512 or more KV entries: 55040 bytes',
      'FLASH_ATTN_EXT half8x8, head 128/128, batch 4 to 8, 512 or more KV entries: 55296 bytes',
      'FLASH_ATTN_EXT half8x8, head 256/256, batch 4 to 8, 512 or more KV entries: 57344 bytes',
      'MUL_MAT_ID mul_mm_id, up to 14328 expert rows: 65504 bytes',
    ]);
  });

  it('head 128: nsgmax doubles to 16 exactly where FATTN_SMEM(16) = 55296 fits the claim', () => {
    const head128 = (claim: number) =>
      predictThreadgroup('ggml-metal-m', ctx(claim)).configurations.find(
        (c) => c.kernel === 'FLASH_ATTN_EXT half8x8' && c.head === '128/128',
      )!.bytes;
    expect([head128(55295), head128(55296)]).toEqual([28672, 55296]);
  });

  it('the vec kernel never changes with the claim from 32768: 1024 threads cap it at 32 SIMD groups', () => {
    const vec = (claim: number) =>
      predictThreadgroup('ggml-metal-m', ctx(claim))
        .configurations.filter((c) => c.kernel === 'FLASH_ATTN_EXT vec')
        .map((c) => c.bytes);
    expect([vec(32768), vec(65536), vec(1 << 20)]).toEqual([
      [12544, 20992],
      [12544, 20992],
      [12544, 20992],
    ]);
  });

  it('MUL_MAT_ID: the bound is there up to b5327 and gone from b5328 (the boundary as read from llama.cpp history, not repeated here)', () => {
    const kernels = (release: string) =>
      predictThreadgroup('ggml-metal-m', ctx(65536, { release: parseRelease(release) })).configurations.some(
        (c) => c.kernel === 'MUL_MAT_ID mul_mm_id',
      );
    expect([kernels('b5327'), kernels('b5328'), kernels('b4753')]).toEqual([true, false, true]);
  });

  it('dst_rows_max: (claim − 32 − 8192)/4 rows, the request 8192 + 4 per row', () => {
    const mulMatId = (claim: number) =>
      predictThreadgroup('ggml-metal-m', ctx(claim)).configurations.filter((c) => c.kernel.startsWith('MUL_MAT_ID'));
    expect(mulMatId(8228).map((c) => [c.batch, c.bytes])).toEqual([['up to 1 expert rows', 8208]]);
    expect(mulMatId(8227)).toEqual([]);
  });

  it('nothing is listed where flash attention and MUL_MAT_ID run on the CPU (no SIMD-group matrix)', () => {
    expect(predictThreadgroup('ggml-metal-m', ctx(65536, { simdgroupMm: false })).configurations).toEqual([]);
  });
});

describe('ggml-metal.m (read at b3658): the half8x8 kernel sizes nsgmax from the claim, without the dequantized KV', () => {
  it('on 32768 and 65536 bytes: nsgmax 16 then 32, heads 64 to 128; the vec kernel does not read it', () => {
    const at = (claim: number) => bytesOf('ggml-metal-m-b3658', ctx(claim));
    expect(at(32768)).toEqual([
      ['FLASH_ATTN_EXT half8x8', '64/64', null, '1 to 8', '512 or more', 21504],
      ['FLASH_ATTN_EXT half8x8', '80/80', null, '1 to 8', '512 or more', 21760],
      ['FLASH_ATTN_EXT half8x8', '96/96', null, '1 to 8', '512 or more', 22016],
      ['FLASH_ATTN_EXT half8x8', '112/112', null, '1 to 8', '512 or more', 22272],
      ['FLASH_ATTN_EXT half8x8', '128/128', null, '4 to 8', '512 or more', 22528],
      ['MUL_MAT_ID mul_mm_id', null, null, 'up to 6136 expert rows', null, 32736],
    ]);
    expect(at(65536).map((c) => c[5])).toEqual([41984, 42240, 42496, 42752, 43008, 65504]);
  });

  it('head 128: 32 SIMD groups exactly where 16·(128 + 80·32) = 43008 fits the claim', () => {
    const head128 = (claim: number) =>
      predictThreadgroup('ggml-metal-m-b3658', ctx(claim)).configurations.find((c) => c.head === '128/128')!.bytes;
    expect([head128(43007), head128(43008)]).toEqual([22528, 43008]);
  });
});

describe('ggml-metal-ops.cpp v0.4.0 and v0.5.0: the tuned Q=4 falls back to Q=1 above the claim', () => {
  it('FATTN_SMEM of the vec kernel: heads up to 320 need at most 32768 bytes with Q=4 and four SIMD groups', () => {
    const heads = [32, 40, 48, 64, 72, 80, 96, 112, 128, 192, 256].map((h) => vecKernelBytes(h, h, 4, 4));
    expect(Math.max(...heads, vecKernelBytes(320, 256, 4, 4), vecKernelBytes(192, 128, 4, 4))).toBe(32768);
    expect([vecKernelBytes(512, 512, 4, 4), vecKernelBytes(576, 512, 4, 4)]).toEqual([53248, 57344]);
    expect([vecKernelBytes(576, 512, 4, 1), vecKernelBytes(576, 512, 2, 4), vecKernelBytes(576, 512, 4, 2)]).toEqual([
      14336, 28672, 28672,
    ]);
  });

  it("v0.5.0, Apple10's rows: head 576 asks 57344 bytes where the claim holds it, the fallback's 14336 one byte below", () => {
    const head576 = (claim: number) =>
      predictThreadgroup('vec-fallback-family', ctx(claim, { tuningKey: '10' })).configurations.find(
        (c) => c.head === '576/512' && c.kvType === 'F16',
      )!;
    expect([head576(57344).bytes, head576(57343).bytes]).toEqual([57344, 14336]);
    expect(head576(57343).reason).toBe('the tuned Q=4 needs 57344 bytes, above the claim: falls back to Q=1');
  });

  it('v0.5.0 under Apple9 (cua-release on a stock guest) and v0.4.0 on a generic name pick no Q=4 at these heads', () => {
    expect(predictThreadgroup('vec-fallback-family', ctx(65536, { tuningKey: '9' })).configurations).toEqual([]);
    expect(predictThreadgroup('vec-fallback-chip', ctx(65536, { tuningKey: null })).configurations).toEqual([]);
    expect(
      predictThreadgroup('vec-fallback-chip', ctx(65536, { tuningKey: 'GGML_METAL_DEVICE_M4_MAX' })).configurations,
    ).toEqual([]);
  });

  it("v0.4.0, the M2 Max's rows: F16 head 512 decode to 3 rows, 4097 to 16383 KV entries", () => {
    const t = predictThreadgroup('vec-fallback-chip', ctx(65536, { tuningKey: 'GGML_METAL_DEVICE_M2_MAX' }));
    expect(t.configurations.map(configurationText)).toEqual([
      'FLASH_ATTN_EXT vec, head 512/512, KV F16, batch 1 (decode), 4097 to 16383 KV entries: 53248 bytes',
      'FLASH_ATTN_EXT vec, head 512/512, KV F16, batch 2, 4097 to 16383 KV entries: 53248 bytes',
      'FLASH_ATTN_EXT vec, head 512/512, KV F16, batch 3, 4097 to 16383 KV entries: 53248 bytes',
    ]);
  });

  it('every wide row reads as a KV type, heads 512 or 576 over 512, a KV bucket and batch buckets 1 to 5', () => {
    const rows = Object.values(FA_VEC_WIDE_Q4_ROWS).flatMap((byKey) => Object.values(byKey).flat());
    for (const row of rows) {
      const r = readWideRow(row);
      expect([[512, 576].includes(r.dk), r.dv, [4097, 16384].includes(r.kv)]).toEqual([true, 512, true]);
      expect(r.rows.every((b) => b >= 1 && b <= 5)).toBe(true);
    }
    expect(rows.length).toBe(51);
  });
});

describe('asserts only, and releases not read', () => {
  it('asserts: read only by GGML_ASSERTs, so no configuration depends on the claim', () => {
    expect(predictThreadgroup('asserts', ctx(65536))).toEqual({
      reads: 'asserts',
      claim: 65536,
      source:
        'ggml-metal-ops.cpp (read at b6673, b7347, b8390, b10361): only GGML_ASSERTs read it (b6673 and b7347 also size an nsgmax from half of it, whose value the workgroup split then overwrites), so no request depends on it',
      configurations: [],
    });
  });

  it('unread: not predicted, and said so', () => {
    const t = predictThreadgroup('unread', ctx(65536));
    expect([t.reads, t.configurations]).toEqual(['unread', []]);
  });
});

describe('threadgroupChanges: stock against patched, by configuration', () => {
  it('pairs ggml-metal.m configurations whose bounds move with the claim, and names the ones only one side runs', () => {
    const stock = predictThreadgroup('ggml-metal-m', ctx(32768));
    const patched = predictThreadgroup('ggml-metal-m', ctx(65536));
    const changes = threadgroupChanges(stock, patched).map((c) => [c.kernel, c.head, c.stockBytes, c.patchedBytes]);
    expect(changes).toEqual([
      ['FLASH_ATTN_EXT half8x8', '64/64', 27648, 54272],
      ['FLASH_ATTN_EXT half8x8', '80/80', 27904, 54528],
      ['FLASH_ATTN_EXT half8x8', '96/96', 28160, 54784],
      ['FLASH_ATTN_EXT half8x8', '112/112', 28416, 55040],
      ['FLASH_ATTN_EXT half8x8', '128/128', 28672, 55296],
      ['FLASH_ATTN_EXT half8x8', '256/256', 30720, 57344],
      ['MUL_MAT_ID mul_mm_id', null, 32736, 65504],
    ]);
    const off = predictThreadgroup('ggml-metal-m', ctx(32768, { simdgroupMm: false }));
    expect(threadgroupChanges(patched, off).map((c) => [c.kernel, c.head, c.stockBytes, c.patchedBytes])).toEqual([
      ['FLASH_ATTN_EXT half8x8', '64/64', 54272, null],
      ['FLASH_ATTN_EXT half8x8', '80/80', 54528, null],
      ['FLASH_ATTN_EXT half8x8', '96/96', 54784, null],
      ['FLASH_ATTN_EXT half8x8', '112/112', 55040, null],
      ['FLASH_ATTN_EXT half8x8', '128/128', 55296, null],
      ['FLASH_ATTN_EXT half8x8', '256/256', 57344, null],
      ['FLASH_ATTN_EXT vec', '128/128', 12544, null],
      ['FLASH_ATTN_EXT vec', '256/256', 20992, null],
      ['MUL_MAT_ID mul_mm_id', null, 65504, null],
    ]);
    expect(threadgroupChanges(patched, patched)).toEqual([]);
  });
});

describe('above the hardware: more than 32768 bytes, and nothing without a claim', () => {
  it('a request of exactly 32768 bytes fits every Apple GPU; 32769 does not', () => {
    const config = (bytes: number) => ({
      kernel: 'K',
      head: null,
      kvType: null,
      batch: '1',
      kv: null,
      bytes,
      reason: 'test',
    });
    const t = { reads: 'sizes', claim: 65536, source: 'test', configurations: [config(32768), config(32769)] } as const;
    expect(aboveHardware({ ...t, configurations: [...t.configurations] }).map((c) => c.bytes)).toEqual([32769]);
  });

  it('a device that answers no threadgroup memory has no configuration sized from it', () => {
    const t = predictThreadgroup('ggml-metal-m', { claim: null, simdgroupMm: true, tuningKey: null, release: null });
    expect([t.reads, t.claim, t.configurations]).toEqual(['sizes', null, []]);
  });

  it('every tuned row under a 65536 claim: the configurations that then ask for more than any Apple GPU has', () => {
    const above: Record<string, string[]> = {};
    for (const [kind, model] of [
      ['chip', 'vec-fallback-chip'],
      ['family', 'vec-fallback-family'],
    ] as const) {
      for (const key of Object.keys(FA_VEC_WIDE_Q4_ROWS[kind])) {
        const t = predictThreadgroup(model, { claim: 65536, simdgroupMm: true, tuningKey: key, release: null });
        above[`${kind} ${key}`] = aboveHardware(t).map(configurationText);
      }
    }
    // test/conformance/threadgroup.test.ts holds the rows to fa_vec_pick compiled from each tarball; this pins what
    // the prediction makes of them.
    expect(above).toMatchSnapshot();
  });
});
