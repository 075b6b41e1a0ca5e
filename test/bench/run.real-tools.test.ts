// `bench` with llama.cpp's real tools (llama-bench and llama-perplexity built for the CPU from the source
// node-llama-cpp bundles, scripts/build/llama-tools.mjs) on tiny deterministic models (scripts/build/tiny-gguf.mjs),
// stock and patched over the simulated Metal. The CPU tools never ask Metal anything, so the speed-ups are about 1
// and a model against itself is exact; a patched side given another model (another seed) must differ. The parsers
// also read what these tools printed (test/fixtures/bench/).
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseLlamaBench } from '../../lib/bench/llama-bench.js';
import { parseKlDivergence } from '../../lib/bench/perplexity.js';
import {
  type LlamaTools,
  llamaTools,
  llamaToolsPrerequisites,
  ToolsUnavailable,
} from '../../scripts/build/llama-tools.mjs';
import { writeTinyModel } from '../../scripts/build/tiny-gguf.mjs';
import { isSimulatedPlatform, requireSimBuild, root, runCli } from '../support/helpers.js';

const fixtures = path.join(root, 'test', 'fixtures', 'bench');
const GUEST = { METAL_CAP_SHIM_SIM_SNAPSHOT: 'vz-guest-m1-ultra-tahoe-stock' };

let skipReason: string | null = null;
try {
  await llamaToolsPrerequisites();
} catch (err) {
  if (!(err instanceof ToolsUnavailable)) throw err;
  skipReason = `the real llama.cpp tools cannot be built here: ${err.message}`;
  console.warn(`test/bench/run.real-tools.test.ts skipped: ${skipReason}`);
}

describe("the parsers read what llama.cpp's own tools printed", () => {
  it('llama-bench -o json: one record per test, the build named from its commit (a package release has build number 0)', () => {
    const records = parseLlamaBench(readFileSync(path.join(fixtures, 'llama-bench.json'), 'utf8'), 'json');
    expect(records.map((r) => [r.test, r.nPrompt, r.nGen, r.avgTs > 0, r.build, r.backend])).toEqual([
      ['pp32', 32, 0, true, 'v0.5.0 (de3ff81)', 'CPU'],
      ['tg8', 0, 8, true, 'v0.5.0 (de3ff81)', 'CPU'],
    ]);
  });

  it('llama-perplexity --kl-divergence: the statistics section, a model against itself and against another seed', () => {
    const same = parseKlDivergence(readFileSync(path.join(fixtures, 'perplexity-kld-same.txt'), 'utf8'));
    const other = parseKlDivergence(readFileSync(path.join(fixtures, 'perplexity-kld-other.txt'), 'utf8'));
    expect([same.meanKld, same.sameTopP, same.chunks]).toEqual([-0, 100, 7]);
    expect(same.pplRatio).toBeGreaterThan(0.9999);
    expect(same.pplRatio).toBeLessThan(1.0001);
    expect(other.meanKld).toBeGreaterThan(1);
    expect(other.sameTopP).toBeLessThan(5);
    expect(other.kld99).toBeGreaterThan(other.meanKld);
    // Every number as the tool printed it, with its ±.
    expect(other).toEqual({
      meanKld: 1.320544,
      medianKld: 1.322021,
      kld99: 1.354474,
      kld999: 1.365479,
      maxKld: 1.368311,
      sameTopP: 0.922,
      pplRatio: 1.113694,
      rmsDp: 0.006,
      uncertainty: { meanKld: 0.001061, sameTopP: 0.65, pplRatio: 0.127294, rmsDp: 0.001 },
      chunks: 7,
      from: 'statistics',
    });
  });
});

describe.skipIf(skipReason !== null || !isSimulatedPlatform)('bench with the real tools, stock and patched', () => {
  let tools: LlamaTools;
  const dir = mkdtempSync(path.join(tmpdir(), 'mcs-bench-real-'));
  const model = path.join(dir, 'tiny-1.gguf');
  const text = path.join(fixtures, 'text.txt');

  beforeAll(async () => {
    requireSimBuild();
    tools = await llamaTools();
    writeTinyModel(model, { seed: 1, vocab: tools.vocab });
    writeTinyModel(path.join(dir, 'tiny-2.gguf'), { seed: 2, vocab: tools.vocab });
  }, 1_800_000);

  it("speed: a sweep of the real llama-bench (two models, -fa 0,1, -t 1,2): one row per combination, its numbers the records' own", () => {
    const other = path.join(dir, 'tiny-2.gguf');
    const r = runCli(
      [
        'bench',
        '--rounds',
        '2',
        '--json',
        '--',
        tools.bench,
        '-m',
        model,
        '-m',
        other,
        '-fa',
        '0,1',
        '-t',
        '1,2',
        '-p',
        '32',
        '-n',
        '0',
        '-r',
        '1',
      ],
      GUEST,
    );
    expect([r.status, r.stderr]).toEqual([0, '']);
    const result = JSON.parse(r.stdout);
    expect(
      result.runs.map((x: { side: string; injectorLoaded: boolean; exitCode: number }) => [
        x.side,
        x.injectorLoaded,
        x.exitCode,
      ]),
    ).toEqual([
      ['stock', false, 0],
      ['host-family', true, 0],
      ['host-family', true, 0],
      ['stock', false, 0],
    ]);
    // The CPU tools: valid, and said to be on a backend no profile changes.
    expect(result.validity).toEqual({ valid: true, reason: null, affected: false, backends: ['CPU'] });
    // Every combination once, in the order llama-bench ran them, labelled by what tells them apart.
    const combos = [path.basename(model), 'tiny-2.gguf'].flatMap((m) =>
      [1, 2].flatMap((t) => [0, 1].map((fa) => ({ m, t, fa }))),
    );
    const labels = result.speed.map((row: { label: string }) => row.label);
    expect([...labels].sort()).toEqual(combos.map(({ m, t, fa }) => `pp32 model=${m} t=${t} fa=${fa}`).sort());
    expect(result.speed.map((row: { build: string; backend: string }) => [row.build, row.backend])).toEqual(
      combos.map(() => [`${tools.release} (${tools.commit.slice(0, 7)})`, 'CPU']),
    );
    // Each row's samples are the avg_ts of the raw records with the same model, threads and flash attention, per side.
    const raw = (side: string, row: { key: Record<string, unknown> }) =>
      result.records
        .filter((x: { side: string }) => x.side === side)
        .sort((a: { round: number }, b: { round: number }) => a.round - b.round)
        .map(
          (x: { records: Record<string, unknown>[] }) =>
            x.records.find(
              (rec) =>
                path.basename(String(rec.model_filename)) === row.key.model_filename &&
                rec.n_threads === row.key.n_threads &&
                rec.flash_attn === row.key.flash_attn &&
                rec.n_prompt === row.key.n_prompt,
            )!.avg_ts,
        );
    for (const row of result.speed) {
      expect(row.stock.samples).toEqual(raw('stock', row));
      expect(row.profiles[0].samples).toEqual(raw('host-family', row));
      const p = row.profiles[0];
      expect(p.ratios).toEqual(p.samples.map((v: number, i: number) => v / row.stock.samples[i]));
      expect(p.speedup.low).toBeLessThanOrEqual(p.speedup.centre);
      expect(p.speedup.high).toBeGreaterThanOrEqual(p.speedup.centre);
    }
  });

  it('fidelity: the same model on both sides is exact, within tolerance', () => {
    const r = runCli(
      ['bench', '--fidelity', '--json', '--', tools.perplexity, '-m', model, '-f', text, '-c', '64'],
      GUEST,
    );
    expect([r.status, r.stderr]).toEqual([0, '']);
    const [row] = JSON.parse(r.stdout).fidelity;
    expect([row.name, row.sameTopP, row.verdict, row.reasons, Math.abs(row.meanKld)]).toEqual([
      'host-family',
      100,
      'within-tolerance',
      [],
      0,
    ]);
  });

  it('fidelity --control: stock against its own logits is exact, the row apart from the profiles', () => {
    const r = runCli(
      ['bench', '--fidelity', '--control', '--json', '--', tools.perplexity, '-m', model, '-f', text, '-c', '64'],
      GUEST,
    );
    expect([r.status, r.stderr]).toEqual([0, '']);
    const result = JSON.parse(r.stdout);
    expect(result.runs.map((x: { side: string; exitCode: number }) => [x.side, x.exitCode])).toEqual([
      ['stock', 0],
      ['stock', 0],
      ['host-family', 0],
    ]);
    const c = result.control;
    expect([c.name, c.from, c.chunks, c.sameTopP, c.verdict, Math.abs(c.meanKld), c.rmsDp]).toEqual([
      'stock (control)',
      'statistics',
      7,
      100,
      'within-tolerance',
      0,
      0,
    ]);
    expect(result.fidelity.map((f: { name: string }) => f.name)).toEqual(['host-family']);
  });

  it("fidelity: a text too short for two contexts ends with llama-perplexity's own words", () => {
    const short = path.join(dir, 'short.txt');
    writeFileSync(short, 'Once upon a time.\n');
    const r = runCli(
      ['bench', '--fidelity', '--json', '--', tools.perplexity, '-m', model, '-f', short, '-c', '64'],
      GUEST,
    );
    expect(r.status).toBe(1);
    const { error } = JSON.parse(r.stdout);
    expect(error.code).toBe('ERR_BENCH_TOOL');
    const n = Number(/tokenizes to only (\d+) tokens/.exec(error.message)?.[1]);
    expect(n).toBeGreaterThan(0);
    expect(n).toBeLessThan(128);
    expect(error.message).toBe(
      `${tools.perplexity} (stock) saved no logits; it said: perplexity: you need at least 128 tokens to evaluate perplexity with a context of 64; perplexity: the data file you provided tokenizes to only ${n} tokens (give a longer -f text, or a smaller -c)`,
    );
  });

  it('fidelity, the real negative: a patched side that runs another model differs, and bench exits 1', () => {
    // Patched (the shim preloaded), the wrapper swaps in the model of another seed: real numbers of another model.
    const wrapper = path.join(dir, 'llama-perplexity-other-when-patched');
    writeFileSync(
      wrapper,
      `#!/bin/sh\nif [ -n "$LD_PRELOAD" ]; then\n  for a in "$@"; do shift; [ "$a" = ${JSON.stringify(model)} ] && a=${JSON.stringify(path.join(dir, 'tiny-2.gguf'))}; set -- "$@" "$a"; done\nfi\nexec ${JSON.stringify(tools.perplexity)} "$@"\n`,
    );
    chmodSync(wrapper, 0o755);
    const r = runCli(['bench', '--fidelity', '--json', '--', wrapper, '-m', model, '-f', text, '-c', '64'], GUEST);
    expect(r.status).toBe(1);
    const [row] = JSON.parse(r.stdout).fidelity;
    expect(row.verdict).toBe('differs');
    expect(row.meanKld).toBeGreaterThan(0.1);
    expect(row.sameTopP).toBeLessThan(99);
    expect(row.reasons.slice(0, 2)).toEqual([
      `mean KLD ${row.meanKld} is above 0.001`,
      `same top token ${row.sameTopP} % is below 99 %`,
    ]);
  });
});
