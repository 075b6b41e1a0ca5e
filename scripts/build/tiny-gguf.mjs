#!/usr/bin/env node
// A tiny deterministic llama for the real llama.cpp tools (scripts/build/llama-tools.mjs): a GGUF v3 file with
// random F32 weights from a fixed seed and the tokenizer of a vocab-only GGUF (the release's
// models/ggml-vocab-llama-spm.gguf, which llamaTools() puts in its cache as vocab.gguf). llama-bench and
// llama-perplexity load it like any model; two seeds give two models whose next-token distributions differ widely
// (test/repo/llama-tools.test.ts).
//
// The format, as llama.cpp's ggml/include/gguf.h and ggml/src/gguf.cpp define it (little-endian): "GGUF", version
// (u32), tensor count (i64), KV count (i64); each KV a key (string: u64 length + bytes), a type (u32) and its value
// (an array: element type u32, count u64, elements); each tensor's info: name, dimension count (u32), dimensions
// (i64, ne0 first), ggml type (u32), offset into the data (u64, a multiple of the alignment, in order); the data
// after padding to general.alignment (32 by default). Key and tensor names are gguf-py/gguf/constants.py's.
//
//   node scripts/build/tiny-gguf.mjs OUT.gguf [--seed N] [--vocab VOCAB.gguf]
//
// writes OUT.gguf (seed 1 by default). Without --vocab it takes the release's vocab.gguf from the node-llama-cpp
// project of node-llama-cpp-prebuilt.mjs (installed once, about a minute; the same file the llama.cpp tools build
// keeps), saying so first: the other source, the cold tools build, takes 12 to 21 minutes.
import { closeSync, fstatSync, openSync, readSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The model's shape: 2 layers, n_embd 64, 4 heads (16 wide), n_ff 128, context 256. */
export const TINY_SHAPE = Object.freeze({
  nLayer: 2,
  nEmbd: 64,
  nHead: 4,
  nHeadKv: 4,
  nFf: 128,
  nCtx: 256,
  rmsEps: 1e-5,
});

const T = Object.freeze({
  UINT8: 0,
  INT8: 1,
  UINT16: 2,
  INT16: 3,
  UINT32: 4,
  INT32: 5,
  FLOAT32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
  UINT64: 10,
  INT64: 11,
  FLOAT64: 12,
});
/** Bytes per value of each fixed-size GGUF type. */
const FIXED_SIZE = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
const GGML_TYPE_F32 = 0;
const ALIGNMENT = 32;

/** The largest vocab file read (the release's are 0.4 to 12 MB). */
const MAX_VOCAB_BYTES = 64 << 20;
const MAX_KV = 4096;
const MAX_KEY = 256;

/**
 * Reads a vocab-only GGUF's KV section in one pass, every length checked against what is left of the file: the
 * `tokenizer.ggml.*` entries as their raw bytes (key, type and value, copied as they are) and the token count.
 */
export function readVocab(file) {
  const fd = openSync(file, 'r');
  let buf;
  try {
    const size = fstatSync(fd).size;
    if (size > MAX_VOCAB_BYTES) throw new Error(`${file}: ${size} bytes, more than a vocab file (${MAX_VOCAB_BYTES})`);
    buf = Buffer.alloc(size);
    let got = 0;
    while (got < size) {
      const n = readSync(fd, buf, got, size - got, got);
      if (n === 0) break;
      got += n;
    }
    buf = buf.subarray(0, got);
  } finally {
    closeSync(fd);
  }
  let pos = 0;
  const fail = (what) => {
    throw new Error(`${path.basename(file)}: ${what} at byte ${pos}`);
  };
  const need = (n) => {
    if (n > buf.length - pos) fail(`truncated (${n} bytes wanted, ${buf.length - pos} left)`);
  };
  const u32 = () => {
    need(4);
    pos += 4;
    return buf.readUInt32LE(pos - 4);
  };
  /** A u64 count, bounded by `max` (it must fit what is left of the file, or a fixed limit). */
  const count = (max, what) => {
    need(8);
    const v = buf.readBigUInt64LE(pos);
    if (v > BigInt(max)) fail(`${what} ${v} is more than ${max}`);
    pos += 8;
    return Number(v);
  };
  const string = (max = buf.length - pos) => {
    const n = count(Math.min(max, buf.length - pos), 'string length');
    need(n);
    pos += n;
    return buf.toString('utf8', pos - n, pos);
  };
  const skipValue = (type) => {
    if (type === T.STRING) string();
    else if (FIXED_SIZE[type] !== undefined) {
      need(FIXED_SIZE[type]);
      pos += FIXED_SIZE[type];
    } else fail(`value type ${type}`);
  };

  need(4);
  if (buf.toString('latin1', 0, 4) !== 'GGUF') fail('not a GGUF file (magic)');
  pos = 4;
  const version = u32();
  if (version !== 3) fail(`GGUF version ${version}, not 3`);
  count(Number.MAX_SAFE_INTEGER, 'tensor count');
  const nKv = count(MAX_KV, 'KV count');
  const entries = [];
  let nVocab = null;
  for (let i = 0; i < nKv; i++) {
    const start = pos;
    const key = string(MAX_KEY);
    const type = u32();
    let length = null;
    if (type === T.ARRAY) {
      const elem = u32();
      if (elem === T.ARRAY) fail(`${key}: nested array`);
      if (elem !== T.STRING && FIXED_SIZE[elem] === undefined) fail(`${key}: array of type ${elem}`);
      // Every element takes at least its size (a string its 8-byte length): the count cannot exceed what is left.
      length = count(Math.floor((buf.length - pos - 8) / (FIXED_SIZE[elem] ?? 8)), `${key}: array length`);
      for (let j = 0; j < length; j++) skipValue(elem);
    } else skipValue(type);
    if (key.startsWith('tokenizer.ggml.')) {
      entries.push({ key, raw: buf.subarray(start, pos) });
      if (key === 'tokenizer.ggml.tokens') nVocab = length;
    }
  }
  if (nVocab === null || nVocab === 0) throw new Error(`${path.basename(file)}: no tokenizer.ggml.tokens array`);
  if (!entries.some((e) => e.key === 'tokenizer.ggml.model'))
    throw new Error(`${path.basename(file)}: no tokenizer.ggml.model`);
  return { entries, nVocab };
}

/** A 32-bit generator (mulberry32) for one tensor: seeded by the model's seed and the tensor's name. */
function generator(seed, name) {
  let h = 2166136261 ^ seed;
  for (const ch of Buffer.from(name, 'utf8')) h = Math.imul(h ^ ch, 16777619);
  let a = h >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The tensors, in file order: name, dimensions (ne0 first) and how its values are drawn. */
function tensors(nVocab) {
  const { nLayer, nEmbd, nHead, nHeadKv, nFf } = TINY_SHAPE;
  const nEmbdKv = (nEmbd / nHead) * nHeadKv;
  // Uniform in [-scale, scale]; a matrix's scale 1/sqrt(ne0) keeps activations near 1. The output matrix's, 0.25, gives
  // logits of standard deviation about 1.15: two seeds disagree widely (a mean KL divergence of about 1.3), and the
  // logits of a position span less than the 16 that llama-perplexity's saved log-probabilities keep, so a model
  // against its own saved logits has PPL(Q) = PPL(base) (scale 1 spans more: its saved PPL(base) came out 37 times
  // lower than PPL(Q)).
  const matrix = (name, ne0, ne1, scale = 1 / Math.sqrt(ne0)) => ({ name, dims: [ne0, ne1], scale });
  const norm = (name) => ({ name, dims: [nEmbd], scale: 0 });
  const list = [matrix('token_embd.weight', nEmbd, nVocab, 1)];
  for (let i = 0; i < nLayer; i++) {
    const b = `blk.${i}`;
    list.push(
      norm(`${b}.attn_norm.weight`),
      matrix(`${b}.attn_q.weight`, nEmbd, nEmbd),
      matrix(`${b}.attn_k.weight`, nEmbd, nEmbdKv),
      matrix(`${b}.attn_v.weight`, nEmbd, nEmbdKv),
      matrix(`${b}.attn_output.weight`, nEmbd, nEmbd),
      norm(`${b}.ffn_norm.weight`),
      matrix(`${b}.ffn_gate.weight`, nEmbd, nFf),
      matrix(`${b}.ffn_up.weight`, nEmbd, nFf),
      matrix(`${b}.ffn_down.weight`, nFf, nEmbd),
    );
  }
  list.push(norm('output_norm.weight'), matrix('output.weight', nEmbd, nVocab, 0.25));
  return list;
}

/** Little-endian GGUF pieces. */
const enc = {
  u32: (v) => {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    return b;
  },
  u64: (v) => {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    return b;
  },
  f32: (v) => {
    const b = Buffer.alloc(4);
    b.writeFloatLE(v);
    return b;
  },
  str: (s) => {
    const bytes = Buffer.from(s, 'utf8');
    return Buffer.concat([enc.u64(bytes.length), bytes]);
  },
};
const kv = {
  u32: (key, v) => Buffer.concat([enc.str(key), enc.u32(T.UINT32), enc.u32(v)]),
  f32: (key, v) => Buffer.concat([enc.str(key), enc.u32(T.FLOAT32), enc.f32(v)]),
  str: (key, v) => Buffer.concat([enc.str(key), enc.u32(T.STRING), enc.str(v)]),
};
const pad = (n) => (ALIGNMENT - (n % ALIGNMENT)) % ALIGNMENT;

/** The whole file for `seed` with the tokenizer of `vocab` (readVocab's answer), as one Buffer. */
export function tinyModelBytes({ seed = 1, vocab }) {
  if (!Number.isSafeInteger(seed) || seed < 0 || seed > 0xffffffff) throw new Error(`seed ${seed}: not a u32`);
  const { nLayer, nEmbd, nHead, nHeadKv, nFf, nCtx, rmsEps } = TINY_SHAPE;
  const a = 'llama';
  const kvs = [
    kv.str('general.architecture', a),
    kv.str('general.name', `metal-cap-shim tiny llama (seed ${seed})`),
    kv.u32('general.file_type', 0),
    kv.u32('general.alignment', ALIGNMENT),
    kv.u32(`${a}.vocab_size`, vocab.nVocab),
    kv.u32(`${a}.context_length`, nCtx),
    kv.u32(`${a}.embedding_length`, nEmbd),
    kv.u32(`${a}.block_count`, nLayer),
    kv.u32(`${a}.feed_forward_length`, nFf),
    kv.u32(`${a}.attention.head_count`, nHead),
    kv.u32(`${a}.attention.head_count_kv`, nHeadKv),
    kv.f32(`${a}.attention.layer_norm_rms_epsilon`, rmsEps),
    kv.u32(`${a}.rope.dimension_count`, nEmbd / nHead),
    ...vocab.entries.map((e) => e.raw),
  ];
  const list = tensors(vocab.nVocab);
  const infos = [];
  let offset = 0;
  for (const t of list) {
    t.offset = offset;
    t.bytes = 4 * t.dims.reduce((x, y) => x * y, 1);
    offset += t.bytes + pad(t.bytes);
    infos.push(
      enc.str(t.name),
      enc.u32(t.dims.length),
      ...t.dims.map((d) => enc.u64(d)),
      enc.u32(GGML_TYPE_F32),
      enc.u64(t.offset),
    );
  }
  const head = Buffer.concat([
    Buffer.from('GGUF', 'latin1'),
    enc.u32(3),
    enc.u64(list.length),
    enc.u64(kvs.length),
    ...kvs,
    ...infos,
  ]);
  const dataStart = head.length + pad(head.length);
  const out = Buffer.alloc(dataStart + offset);
  head.copy(out, 0);
  for (const t of list) {
    const at = dataStart + t.offset;
    const n = t.bytes / 4;
    if (t.scale === 0) {
      for (let i = 0; i < n; i++) out.writeFloatLE(1, at + 4 * i);
    } else {
      const next = generator(seed, t.name);
      for (let i = 0; i < n; i++) out.writeFloatLE((2 * next() - 1) * t.scale, at + 4 * i);
    }
  }
  return out;
}

/**
 * Writes the tiny model of `seed` (default 1) with the tokenizer of the vocab-only GGUF `vocab` to `file`: through a
 * new sibling (O_EXCL) renamed over it. Returns the file and its vocab size.
 */
export function writeTinyModel(file, { seed = 1, vocab }) {
  const v = readVocab(vocab);
  const bytes = tinyModelBytes({ seed, vocab: v });
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, bytes, { flag: 'wx', mode: 0o644 });
    renameSync(tmp, file);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
  return { file, seed, nVocab: v.nVocab, bytes: bytes.length };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  let seed = 1;
  let vocab = null;
  let out = null;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--seed') seed = Number(args[++i]);
    else if (args[i] === '--vocab') vocab = args[++i];
    else if (out === null && !args[i].startsWith('--')) out = args[i];
    else {
      process.stderr.write(`tiny-gguf: unexpected argument ${args[i]}\n`);
      process.exit(2);
    }
  }
  if (out === null) {
    process.stderr.write('usage: node scripts/build/tiny-gguf.mjs OUT.gguf [--seed N] [--vocab VOCAB.gguf]\n');
    process.exit(2);
  }
  const main = async () => {
    if (vocab === null) {
      const { nodeLlamaCppProject, PREBUILT_COST } = await import('./node-llama-cpp-prebuilt.mjs');
      process.stderr.write(
        `tiny-gguf: no --vocab: taking the release's vocab.gguf from the node-llama-cpp project (at once when ` +
          `installed, else about ${PREBUILT_COST.seconds} s)\n`,
      );
      vocab = (await nodeLlamaCppProject()).vocab;
    }
    process.stderr.write(`tiny-gguf: writing ${out} (seed ${seed}, about 17 MB)\n`);
    const written = writeTinyModel(out, { seed, vocab });
    process.stdout.write(`${JSON.stringify({ ...written, vocab })}\n`);
  };
  main().catch((err) => {
    process.stderr.write(`tiny-gguf: ${err.message}\n`);
    process.exit(1);
  });
}
