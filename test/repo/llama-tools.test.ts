// The real llama.cpp tools that `metal-cap-shim bench` is tested with on Linux: llama-bench and llama-perplexity
// built for the CPU from the newest conformance era's release (scripts/build/llama-tools.mjs, cached outside the
// clone and built once), run on tiny deterministic models (scripts/build/tiny-gguf.mjs). It pins what the tools
// print for a bench's parser: llama-bench's JSON records, and llama-perplexity's KL-divergence statistics for a model
// against itself (no divergence) and against a model of another seed (a large one). With UPDATE_BENCH_FIXTURES=1 it
// rewrites test/fixtures/bench/ from this run.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type LlamaTools,
  llamaTools,
  llamaToolsPrerequisites,
  ToolsUnavailable,
} from '../../scripts/build/llama-tools.mjs';
import { readVocab, tinyModelBytes, writeTinyModel } from '../../scripts/build/tiny-gguf.mjs';
import { root } from '../support/helpers.js';

const run = promisify(execFile);
const fixtures = path.join(root, 'test', 'fixtures', 'bench');
const text = path.join(fixtures, 'text.txt');
const update = process.env.UPDATE_BENCH_FIXTURES === '1';

/** Why the tools cannot be had here (no CMake, Ninja, clang-19 or git; no tarball), or null. */
let skipReason: string | null = null;
try {
  await llamaToolsPrerequisites();
} catch (err) {
  if (!(err instanceof ToolsUnavailable)) throw err;
  skipReason = `the real llama.cpp tools cannot be built here: ${err.message}`;
  console.warn(`test/repo/llama-tools.test.ts skipped: ${skipReason}`);
}

/** The statistics a KL-divergence run prints on stdout. */
function kldStats(stdout: string): { meanKld: number; sameTopP: number } {
  const mean = /^Mean\s+KLD:\s+(-?[\d.]+)/m.exec(stdout);
  const same = /^Same top p:\s+([\d.]+)/m.exec(stdout);
  if (mean === null || same === null) throw new Error(`no KL-divergence statistics in:\n${stdout}`);
  return { meanKld: Number(mean[1]), sameTopP: Number(same[1]) };
}

interface BenchRecord {
  n_prompt: number;
  n_gen: number;
  avg_ts: number;
  samples_ts: number[];
  model_type: string;
  build_commit: string;
}

describe('hostile vocab files', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'mcs-vocab-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const gguf = (...parts: Buffer[]) => {
    const file = path.join(dir, `v${Math.random().toString(36).slice(2)}.gguf`);
    writeFileSync(file, Buffer.concat(parts));
    return file;
  };
  const u32 = (v: number) => Buffer.from(new Uint32Array([v]).buffer);
  const u64 = (v: bigint) => Buffer.from(new BigUint64Array([v]).buffer);
  const str = (s: string) => Buffer.concat([u64(BigInt(s.length)), Buffer.from(s)]);
  const header = (nKv: bigint) => Buffer.concat([Buffer.from('GGUF'), u32(3), u64(0n), u64(nKv)]);

  it('rejects what is not a GGUF v3 file, a truncated one and counts larger than the file', () => {
    expect(() => readVocab(gguf(Buffer.from('GGML')))).toThrow(/truncated|magic/);
    expect(() => readVocab(gguf(Buffer.from('GGUF'), u32(2), u64(0n), u64(0n)))).toThrow(/version 2/);
    expect(() => readVocab(gguf(header(1n)))).toThrow(/truncated/);
    expect(() => readVocab(gguf(header(2n ** 40n)))).toThrow(/KV count/);
    expect(() => readVocab(gguf(header(1n), u64(2n ** 62n)))).toThrow(/string length/);
    // An array claiming more strings than the rest of the file could hold fails before reading any.
    expect(() =>
      readVocab(gguf(header(1n), str('tokenizer.ggml.tokens'), u32(9), u32(8), u64(2n ** 32n), str('a'))),
    ).toThrow(/array length/);
    expect(() => readVocab(gguf(header(1n), str('x'), u32(9), u32(9), u64(1n)))).toThrow(/nested array/);
    expect(() => readVocab(gguf(header(0n)))).toThrow(/no tokenizer.ggml.tokens/);
  });

  it('keeps only the tokenizer entries, as bytes, and counts the tokens', () => {
    const tokens = Buffer.concat([str('tokenizer.ggml.tokens'), u32(9), u32(8), u64(2n), str('a'), str('b')]);
    const model = Buffer.concat([str('tokenizer.ggml.model'), u32(8), str('llama')]);
    const other = Buffer.concat([str('llama.context_length'), u32(4), u32(4096)]);
    const v = readVocab(gguf(header(3n), other, tokens, model));
    expect(v.nVocab).toBe(2);
    expect(v.entries.map((e) => e.key)).toEqual(['tokenizer.ggml.tokens', 'tokenizer.ggml.model']);
    expect(Buffer.concat(v.entries.map((e) => e.raw)).equals(Buffer.concat([tokens, model]))).toBe(true);
  });
});

describe.skipIf(skipReason !== null)('the real llama-bench and llama-perplexity on tiny models', () => {
  let tools: LlamaTools;
  let dir: string;
  // Run in `dir` and named relative to it, so the fixtures hold no temporary path.
  const model1 = 'tiny-1.gguf';
  const model2 = 'tiny-2.gguf';
  const logits = 'base.kld';

  beforeAll(async () => {
    // Built once into the cache (scripts/test.sh builds it before the suite); a cold build takes minutes.
    tools = await llamaTools();
    dir = mkdtempSync(path.join(tmpdir(), 'mcs-bench-tools-'));
    writeTinyModel(path.join(dir, model1), { seed: 1, vocab: tools.vocab });
    writeTinyModel(path.join(dir, model2), { seed: 2, vocab: tools.vocab });
  }, 3_600_000);
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const tool = async (program: string, args: string[]) => {
    const { stdout } = await run(program, args, { cwd: dir, maxBuffer: 64 << 20 });
    return stdout;
  };
  const capture = (name: string, stdout: string) => {
    if (update) writeFileSync(path.join(fixtures, name), stdout);
  };

  it('writes the same bytes for a seed, and other bytes for another', () => {
    const vocab = readVocab(tools.vocab);
    expect(vocab.nVocab).toBe(32000);
    const one = tinyModelBytes({ seed: 1, vocab });
    expect(tinyModelBytes({ seed: 1, vocab }).equals(one)).toBe(true);
    expect(readFileSync(path.join(dir, model1)).equals(one)).toBe(true);
    const two = readFileSync(path.join(dir, model2));
    expect(two.equals(one)).toBe(false);
    expect(two.length).toBe(one.length);
  });

  it('llama-bench prints one JSON record per test, with tokens per second', async () => {
    const stdout = await tool(tools.bench, ['-m', model1, '-p', '32', '-n', '8', '-r', '2', '-o', 'json']);
    capture('llama-bench.json', stdout);
    const records = JSON.parse(stdout) as BenchRecord[];
    expect(records.map((r) => [r.n_prompt, r.n_gen])).toEqual([
      [32, 0],
      [0, 8],
    ]);
    for (const r of records) {
      expect(r.avg_ts).toBeGreaterThan(0);
      expect(r.samples_ts).toHaveLength(2);
    }
  }, 120_000);

  it('llama-perplexity finds no divergence between a model and itself', async () => {
    const base = await tool(tools.perplexity, ['-m', model1, '-f', text, '-c', '64', '--kl-divergence-base', logits]);
    capture('perplexity-base.txt', base);
    expect(base).toMatch(/\[1\]\d/);
    const stdout = await tool(tools.perplexity, ['-m', model1, '--kl-divergence-base', logits, '--kl-divergence']);
    capture('perplexity-kld-same.txt', stdout);
    const stats = kldStats(stdout);
    expect(stats.meanKld).toBeLessThan(1e-6);
    expect(stats.sameTopP).toBe(100);
  }, 300_000);

  it('llama-perplexity finds a large divergence from a model of another seed', async () => {
    const stdout = await tool(tools.perplexity, ['-m', model2, '--kl-divergence-base', logits, '--kl-divergence']);
    capture('perplexity-kld-other.txt', stdout);
    const stats = kldStats(stdout);
    expect(stats.meanKld).toBeGreaterThan(0.1);
    expect(stats.sameTopP).toBeLessThan(100);
  }, 300_000);
});

// Checked without the tools too: the fixtures are what a bench parser is tested on.
describe('test/fixtures/bench/', () => {
  it('hold what the runs above print: two bench records, no divergence, a large one', () => {
    const bench = JSON.parse(readFileSync(path.join(fixtures, 'llama-bench.json'), 'utf8')) as BenchRecord[];
    expect(bench).toHaveLength(2);
    expect(bench.every((r) => r.avg_ts > 0)).toBe(true);
    const same = kldStats(readFileSync(path.join(fixtures, 'perplexity-kld-same.txt'), 'utf8'));
    expect(same.meanKld).toBeLessThan(1e-6);
    expect(same.sameTopP).toBe(100);
    const other = kldStats(readFileSync(path.join(fixtures, 'perplexity-kld-other.txt'), 'utf8'));
    expect(other.meanKld).toBeGreaterThan(0.1);
    expect(other.sameTopP).toBeLessThan(100);
  });
});

if (skipReason !== null) {
  describe('the real llama-bench and llama-perplexity on tiny models', () => {
    it.skip(skipReason as string, () => {});
  });
}
