/**
 * What llama.cpp does with the answered `maxThreadgroupMemoryLength`, by rule set: which kernels size their
 * threadgroup memory from it, and how much each configuration then asks. The formulas restate the sources named
 * in each model (read in the node-llama-cpp tarballs' llama.cpp); llama.cpp's own configuration choice is compared
 * with them in test/conformance/threadgroup.test.ts. Every Apple GPU has 32768 bytes, so a request above that is
 * one the hardware cannot serve, whatever the device claimed.
 */
import { APPLE_GPU_THREADGROUP_MEMORY } from '../device/chips.js';
import type { LlamaCppRelease } from './llama-cpp-releases.js';
import type { LlamaCppThreadgroupModel } from './llama-cpp-rule-sets.js';

/** One kernel configuration whose threadgroup request follows from the answered threadgroup memory. */
export interface ThreadgroupConfiguration {
  /** The op and kernel, as llama.cpp names them: `FLASH_ATTN_EXT vec`, `FLASH_ATTN_EXT half8x8`, `MUL_MAT_ID mul_mm_id`. */
  kernel: string;
  /** The K/V head sizes (`576/512`), or null for a kernel without heads. */
  head: string | null;
  /** The KV cache type, where the configuration depends on it (the tuned rows are per type), else null. */
  kvType: string | null;
  /** The rows of the batch (`1 (decode)`, `4 to 8`, `5 to 19`), or for MUL_MAT_ID the expert rows. */
  batch: string;
  /** The KV entries the configuration needs to be chosen (`4097 to 16383`), or null. */
  kv: string | null;
  /** The threadgroup memory the dispatch asks, in bytes. */
  bytes: number;
  /** Why: the SIMD groups, queries per threadgroup, the fallback or the bound. */
  reason: string;
}

/** What one llama.cpp release does with the answered threadgroup memory. */
export interface LlamaCppThreadgroup {
  /** `sizes`: kernels are sized from it; `asserts`: it is read only to assert a request fits; `unread`: not predicted. */
  reads: 'sizes' | 'asserts' | 'unread';
  /** The answered `maxThreadgroupMemoryLength` the prediction is for (null when the report has none). */
  claim: number | null;
  /** Where llama.cpp reads it, and what the prediction assumes. */
  source: string;
  /** Each configuration whose request depends on the claim, with the request under this claim. */
  configurations: ThreadgroupConfiguration[];
}

/** The queries a prediction needs besides the claim: whether flash attention runs on the GPU, and its tuning key. */
export interface ThreadgroupContext {
  claim: number | null;
  /** has_simdgroup_mm: flash attention and MUL_MAT_ID's matrix kernel run on the GPU only with it. */
  simdgroupMm: boolean;
  /** The tuned rows' key: v0.4's chip token (`GGML_METAL_DEVICE_M3`) or v0.5's Apple GPU family (`10`); null: baseline. */
  tuningKey: string | null;
  /** The release asked for, when known (MUL_MAT_ID's bound ends inside the legacy rule set). */
  release: LlamaCppRelease | null;
}

/** GGML_PAD: `n` rounded up to a multiple of `to`. */
const pad = (n: number, to: number): number => Math.ceil(n / to) * to;
const pad16 = (n: number): number => pad(n, 16);

/**
 * ggml-metal.m's nsgmax loop (start at 2, double while FATTN_SMEM(nsgmax) fits the claim, then halve): the largest
 * power of two from 2 whose request fits, or 1 when even 2 does not.
 */
function nsgmaxFor(smem: (nsg: number) => number, claim: number): number {
  let nsgmax = 2;
  // A claim can be any number a profile sets: the loop stops by 2^20 SIMD groups whatever it is.
  while (smem(nsgmax) <= claim && nsgmax < 1 << 20) nsgmax *= 2;
  return nsgmax / 2;
}

/** pipeline.maxTotalThreadsPerThreadgroup / 32, taken as Apple's usual 1024 threads (the pipeline's own is unknown here). */
const LEGACY_THREADS_SIMD_GROUPS = 32;

/** A ggml-metal.m flash-attention reading: the heads of each kernel, and FATTN_SMEM (the vec kernel's only where it
 * sizes from the claim). */
interface LegacyFlashAttention {
  heads: readonly number[];
  smem: (head: number, nsg: number) => number;
  vec: { heads: readonly number[]; smem: (head: number, nsg: number) => number } | null;
}

/**
 * ggml-metal.m's flash attention by the release read: the half8x8 kernel (8 queries, 32 cache values per SIMD group)
 * sizes nsgmax from the claim in both; b4753 adds 16·32 halves per SIMD group (the dequantized KV) and head 256, and
 * its vec kernel sizes from the claim too (b3658's takes MAX(2, MIN(ne11/32, 32)) SIMD groups whatever the claim).
 */
const LEGACY_FLASH_ATTENTION: Readonly<Record<'b3658' | 'b4753', LegacyFlashAttention>> = Object.freeze({
  b3658: {
    heads: [64, 80, 96, 112, 128],
    smem: (head, nsg) => pad16(8 * (head + 2 * nsg * (32 + 8)) * 2),
    vec: null,
  },
  b4753: {
    heads: [64, 80, 96, 112, 128, 256],
    smem: (head, nsg) => pad16((8 * (head + 2 * (2 * 32 + 8) * nsg) + 16 * 32 * nsg) * 2),
    vec: { heads: [128, 256], smem: (head, nsg) => pad16((head + 2 * 32 * nsg + head * nsg) * 2) },
  },
});

/**
 * ggml-metal.m (ggml_metal_encode_node FLASH_ATTN_EXT, as `era` reads): the half8x8 kernel, for at most 8 batch rows,
 * takes MAX(4, MIN(nsgmax, ne11/32, 32)) SIMD groups; more rows take 4 whatever the claim. b4753's vec kernel (heads
 * 128 and 256, fewer than 4 rows) does the same with MAX(2, …), rounded down to a power of two.
 */
function legacyFlashAttention(claim: number, era: LegacyFlashAttention): ThreadgroupConfiguration[] {
  const out: ThreadgroupConfiguration[] = [];
  for (const head of era.heads) {
    const smem = (nsg: number): number => era.smem(head, nsg);
    const nsgmax = nsgmaxFor(smem, claim);
    const nsg = Math.max(4, Math.min(nsgmax, LEGACY_THREADS_SIMD_GROUPS));
    out.push({
      kernel: 'FLASH_ATTN_EXT half8x8',
      head: `${head}/${head}`,
      kvType: null,
      batch: head % 128 === 0 ? '4 to 8' : '1 to 8',
      kv: `${32 * nsg} or more`,
      bytes: smem(nsg),
      reason: `nsgmax ${nsgmax} from the claim, so ${nsg} SIMD groups of 8 queries`,
    });
  }
  for (const head of era.vec?.heads ?? []) {
    const smem = (nsg: number): number => era.vec!.smem(head, nsg);
    const nsgmax = nsgmaxFor(smem, claim);
    const nsgt = Math.max(2, Math.min(nsgmax, LEGACY_THREADS_SIMD_GROUPS));
    const nsg = 2 ** Math.floor(Math.log2(nsgt));
    out.push({
      kernel: 'FLASH_ATTN_EXT vec',
      head: `${head}/${head}`,
      kvType: null,
      batch: '1 to 3',
      kv: `${32 * nsg} or more`,
      bytes: smem(nsg),
      reason: `nsgmax ${nsgmax} from the claim, so ${nsg} SIMD groups of 1 query`,
    });
  }
  return out;
}

/**
 * ggml-metal.m (b4753, MUL_MAT_ID): dst_rows_max = (claim − 32 − 8192)/4 bounds the expert rows (experts used × rows)
 * by an assert, and the matrix kernel asks 8192 + 4 bytes per row: the most rows the claim lets through ask the most.
 */
function legacyMulMatId(claim: number): ThreadgroupConfiguration[] {
  const rows = Math.floor((claim - 32 - 8192) / 4);
  if (rows < 1) return [];
  return [
    {
      kernel: 'MUL_MAT_ID mul_mm_id',
      head: null,
      kvType: null,
      batch: `up to ${rows} expert rows`,
      kv: null,
      bytes: pad16(8192 + rows * 4),
      reason: `dst_rows_max (${claim} − 32 − 8192)/4 = ${rows}: more expert rows fail its assert`,
    },
  ];
}

/** The KV cache types of the tuned rows, as the sources spell them. */
export type TunedKvType = 'F16' | 'Q4_0' | 'Q4_1' | 'Q5_0' | 'Q5_1' | 'Q8_0';

/**
 * A tuned row whose configuration is Q=4 at head 512 or 576, where four SIMD groups (more than 4096 KV entries) need
 * more than 32768 bytes: `F16 576/512 kv4097 1,3`: KV type, K/V heads, the KV bucket (`kv4097`: 4097 to 16383
 * entries; `kv16384`: 16384 or more) and the batch buckets (1, 2, 3, 4; 5 stands for 5 to 19 rows).
 */
export type WideRow = `${TunedKvType} ${512 | 576}/512 kv${4097 | 16384} ${string}`;

/** Wide rows by tuning key. */
type WideRows = Readonly<Record<string, readonly WideRow[]>>;

/** The M5 Max's wide rows: v0.5.0's Apple10 table is pooled from the M5 Max's sweep alone, so it has the same. */
const M5_MAX_WIDE_ROWS: readonly WideRow[] = Object.freeze([
  'F16 512/512 kv4097 4',
  'F16 512/512 kv16384 5',
  'F16 576/512 kv4097 1',
  'Q4_0 512/512 kv4097 4',
  'Q4_0 512/512 kv16384 2,3',
  'Q4_0 576/512 kv4097 2,3,4',
  'Q4_0 576/512 kv16384 2,3',
  'Q4_1 576/512 kv4097 1,2',
  'Q4_1 576/512 kv16384 3',
  'Q5_0 576/512 kv4097 2',
  'Q5_0 576/512 kv16384 3',
  'Q5_1 576/512 kv4097 3,4',
  'Q5_1 576/512 kv16384 3,4',
  'Q8_0 512/512 kv4097 1,3,4',
  'Q8_0 512/512 kv16384 2,3',
  'Q8_0 576/512 kv4097 2',
]);

/**
 * The rows of ggml-metal-tuning.cpp's fa_vec_pick that choose Q=4 at head 512 or 576 (the only heads whose Q=4 can
 * need more than 32768 bytes: heads up to 320 need at most 32768 with Q=4 and four SIMD groups), by the key the
 * release looks rows up by: v0.4.0 (node-llama-cpp 3.21.1) by chip, v0.5.0 (node-llama-cpp 3.22.1) by Apple GPU
 * family. Listed from fa_vec_pick compiled from each tarball's own source and run over every chip, family, KV type,
 * KV length and batch (test/conformance/threadgroup.test.ts holds them to it). No key not listed picks Q=4 at these
 * heads: in v0.4.0 the family representative (Apple9's M4 Max) has none, so a device named generically (a VM's "Apple
 * Paravirtual device") never does; in v0.5.0 only Apple10's table does.
 */
export const FA_VEC_WIDE_Q4_ROWS: Readonly<Record<'chip' | 'family', WideRows>> = Object.freeze({
  chip: Object.freeze<WideRows>({
    GGML_METAL_DEVICE_M2_MAX: ['F16 512/512 kv4097 1,2,3'],
    GGML_METAL_DEVICE_M3: [
      'F16 512/512 kv4097 1',
      'F16 512/512 kv16384 1,2,4',
      'F16 576/512 kv4097 1,2,3',
      'F16 576/512 kv16384 2',
    ],
    GGML_METAL_DEVICE_M3_MAX: [
      'F16 512/512 kv4097 1,2,4',
      'F16 512/512 kv16384 1',
      'F16 576/512 kv4097 1,3,4',
      'F16 576/512 kv16384 2',
    ],
    GGML_METAL_DEVICE_M5: [
      'F16 512/512 kv16384 3,4',
      'F16 576/512 kv4097 1',
      'Q8_0 512/512 kv4097 2',
      'Q8_0 512/512 kv16384 1',
    ],
    GGML_METAL_DEVICE_M5_MAX: M5_MAX_WIDE_ROWS,
    GGML_METAL_DEVICE_A18_PRO: [
      'F16 512/512 kv16384 3',
      'F16 576/512 kv4097 1,3',
      'F16 576/512 kv16384 3',
      'Q4_1 512/512 kv4097 1',
      'Q4_1 512/512 kv16384 2,3',
      'Q5_1 576/512 kv16384 3',
    ],
  }),
  family: Object.freeze<WideRows>({
    '10': M5_MAX_WIDE_ROWS,
  }),
});

/** A wide row, read: its KV type, heads, KV bucket and batch buckets. */
export function readWideRow(row: WideRow): { kvType: TunedKvType; dk: number; dv: number; kv: number; rows: number[] } {
  const [kvType, heads, kv, rows] = row.split(' ') as [TunedKvType, string, string, string];
  const [dk, dv] = heads.split('/').map(Number) as [number, number];
  return { kvType, dk, dv, kv: Number(kv.slice('kv'.length)), rows: rows.split(',').map(Number) };
}

/**
 * ggml-metal-ops.cpp (v0.4.0, v0.5.0) FATTN_SMEM of the vec kernel: (PAD(dk,128) + 4·32 + 2·PAD(dv,128)) halves per
 * SIMD group and query, for 32 cache values per SIMD group.
 */
export function vecKernelBytes(dk: number, dv: number, nsg: number, q: number): number {
  return pad16((pad(dk, 128) + 4 * 32 + 2 * pad(dv, 128)) * nsg * q * 2);
}

const batchText = (bucket: number): string => (bucket === 1 ? '1 (decode)' : bucket === 5 ? '5 to 19' : `${bucket}`);

/**
 * ggml-metal-ops.cpp (v0.4.0, v0.5.0 FLASH_ATTN_EXT vec): 32 workgroups, and SIMD groups doubled while 2·32·nsg·32 <
 * ne11 up to 4 (four past 4096 KV entries); the tuned Q falls back to the baseline's Q=1 when FATTN_SMEM(nsg) is above
 * the claim. So each wide Q=4 row asks its full size where the claim holds it, and the fallback's otherwise.
 */
function vecFallback(claim: number, bucket: 'chip' | 'family', key: string | null): ThreadgroupConfiguration[] {
  const rows = key === null ? undefined : FA_VEC_WIDE_Q4_ROWS[bucket][key];
  const out: ThreadgroupConfiguration[] = [];
  for (const row of rows ?? []) {
    const r = readWideRow(row);
    const tuned = vecKernelBytes(r.dk, r.dv, 4, 4);
    const fits = tuned <= claim;
    for (const batch of r.rows) {
      out.push({
        kernel: 'FLASH_ATTN_EXT vec',
        head: `${r.dk}/${r.dv}`,
        kvType: r.kvType,
        batch: batchText(batch),
        kv: r.kv === 4097 ? '4097 to 16383' : '16384 or more',
        bytes: fits ? tuned : vecKernelBytes(r.dk, r.dv, 4, 1),
        reason: fits
          ? `the tuned Q=4 with 4 SIMD groups fits the claim: ${tuned} bytes`
          : `the tuned Q=4 needs ${tuned} bytes, above the claim: falls back to Q=1`,
      });
    }
  }
  return out;
}

/** MUL_MAT_ID's dst_rows_max bound is gone from this build on (a reading of llama.cpp's history not repeated here). */
const MUL_MAT_ID_BOUND_UNTIL = 5328;

const SOURCES: Readonly<Record<LlamaCppThreadgroupModel, string>> = Object.freeze({
  unread:
    'not predicted: no source of these releases was read for its threadgroup reads (flash attention and MUL_MAT_ID may size from it, as b3658 and b4753 do)',
  'ggml-metal-m-b3658':
    "ggml-metal.m ggml_metal_graph_compute (read at b3658): FLASH_ATTN_EXT's half8x8 kernel sizes nsgmax from it, MUL_MAT_ID bounds dst_rows_max by it; other releases of the range predicted as b3658 reads (flash attention arrived within the range); pipeline.maxTotalThreadsPerThreadgroup taken as 1024",
  'ggml-metal-m':
    'ggml-metal.m ggml_metal_encode_node (read at b4753): FLASH_ATTN_EXT sizes nsgmax from it, MUL_MAT_ID bounds dst_rows_max by it (until b5328); other releases of the range predicted as b4753 reads; pipeline.maxTotalThreadsPerThreadgroup taken as 1024',
  asserts:
    'ggml-metal-ops.cpp (read at b6673, b7347, b8390, b10361): only GGML_ASSERTs read it (b6673 and b7347 also size an nsgmax from half of it, whose value the workgroup split then overwrites), so no request depends on it',
  'vec-fallback-chip':
    "ggml-metal-ops.cpp FLASH_ATTN_EXT vec (read at v0.4.0): a tuned configuration falls back to Q=1 when FATTN_SMEM is above it; tuned rows by chip (device_id), then Apple9's representative",
  'vec-fallback-family':
    'ggml-metal-ops.cpp FLASH_ATTN_EXT vec (read at v0.5.0): a tuned configuration falls back to Q=1 when FATTN_SMEM is above it; tuned rows by Apple GPU family',
});

/** Whether the release has MUL_MAT_ID's dst_rows_max bound: before b5328, or unknown (the rule set's first releases). */
function hasMulMatIdBound(release: LlamaCppRelease | null): boolean {
  return release === null || release.kind !== 'build' || release.build < MUL_MAT_ID_BOUND_UNTIL;
}

/**
 * What a release of the `model` rule sets does with the answered threadgroup memory: each configuration whose request
 * depends on it, and the request. Flash attention and MUL_MAT_ID's matrix kernel run on the GPU only with
 * has_simdgroup_mm, so without it no configuration is listed.
 */
export function predictThreadgroup(model: LlamaCppThreadgroupModel, ctx: ThreadgroupContext): LlamaCppThreadgroup {
  const reads = model === 'unread' ? 'unread' : model === 'asserts' ? 'asserts' : 'sizes';
  const base = { reads, claim: ctx.claim, source: SOURCES[model] } as const;
  if (reads !== 'sizes' || ctx.claim === null || !ctx.simdgroupMm) return { ...base, configurations: [] };
  const claim = ctx.claim;
  if (model === 'ggml-metal-m' || model === 'ggml-metal-m-b3658') {
    const era = LEGACY_FLASH_ATTENTION[model === 'ggml-metal-m' ? 'b4753' : 'b3658'];
    const mulMatId = hasMulMatIdBound(ctx.release) ? legacyMulMatId(claim) : [];
    return { ...base, configurations: [...legacyFlashAttention(claim, era), ...mulMatId] };
  }
  return {
    ...base,
    configurations: vecFallback(claim, model === 'vec-fallback-chip' ? 'chip' : 'family', ctx.tuningKey),
  };
}

/** A configuration's identity: the same kernel, head, KV type, batch and KV, under any claim. */
function identity(c: ThreadgroupConfiguration): string {
  // ggml-metal.m's bounds (the KV entries that reach nsgmax, MUL_MAT_ID's most rows) move with the claim.
  if (c.kvType === null) return [c.kernel, c.head, c.batch.replace(/^up to \d+ /, '')].join('|');
  return [c.kernel, c.head, c.kvType, c.batch, c.kv].join('|');
}

/** A configuration whose request differs between the stock and the patched answer (null: not run on the GPU). */
export interface ThreadgroupChange {
  kernel: string;
  head: string | null;
  kvType: string | null;
  batch: string;
  kv: string | null;
  stockBytes: number | null;
  patchedBytes: number | null;
}

/** The configurations whose request the patch changes, in the patched prediction's order, then the stock-only ones. */
export function threadgroupChanges(stock: LlamaCppThreadgroup, patched: LlamaCppThreadgroup): ThreadgroupChange[] {
  const before = new Map(stock.configurations.map((c) => [identity(c), c]));
  const after = new Map(patched.configurations.map((c) => [identity(c), c]));
  const out: ThreadgroupChange[] = [];
  for (const [id, c] of after) {
    const was = before.get(id);
    if (was?.bytes === c.bytes) continue;
    out.push({ ...pick(c), stockBytes: was?.bytes ?? null, patchedBytes: c.bytes });
  }
  for (const [id, c] of before) {
    if (!after.has(id)) out.push({ ...pick(c), stockBytes: c.bytes, patchedBytes: null });
  }
  return out;
}

function pick(c: ThreadgroupConfiguration): Omit<ThreadgroupChange, 'stockBytes' | 'patchedBytes'> {
  return { kernel: c.kernel, head: c.head, kvType: c.kvType, batch: c.batch, kv: c.kv };
}

/** The configurations that ask more threadgroup memory than any Apple GPU has (APPLE_GPU_THREADGROUP_MEMORY). */
export function aboveHardware(t: LlamaCppThreadgroup): ThreadgroupConfiguration[] {
  return t.configurations.filter((c) => c.bytes > APPLE_GPU_THREADGROUP_MEMORY);
}

/** Which configuration, in words: `FLASH_ATTN_EXT vec, head 576/512, KV Q4_0, batch 2, 4097 to 16383 KV entries`. */
export function configurationLabel(
  c: Pick<ThreadgroupConfiguration, 'kernel' | 'head' | 'kvType' | 'batch' | 'kv'>,
): string {
  const parts = [c.kernel];
  if (c.head !== null) parts.push(`head ${c.head}`);
  if (c.kvType !== null) parts.push(`KV ${c.kvType}`);
  parts.push(c.kv === null ? c.batch : `batch ${c.batch}`);
  if (c.kv !== null) parts.push(`${c.kv} KV entries`);
  return parts.join(', ');
}

/** One configuration and its request in words: `…, 4097 to 16383 KV entries: 57344 bytes`. */
export function configurationText(c: ThreadgroupConfiguration): string {
  return `${configurationLabel(c)}: ${c.bytes} bytes`;
}
