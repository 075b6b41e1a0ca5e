// The fidelity table and the node-llama-cpp warm-up line of `bench`'s human output (lib/format/bench.ts): every
// statistic with its ± as llama-perplexity prints it, the control row first, the cells a result written before them
// lacks, and each side's median warm-up.
import { describe, expect, it } from 'vitest';
import type { ChildResult } from '../../lib/bench/node-llama-cpp.js';
import { fidelityVerdict, type Fidelity } from '../../lib/bench/perplexity.js';
import { BENCH_SCHEMA, type BenchResult, type FidelityRow } from '../../lib/bench/run.js';
import { formatBench } from '../../lib/format/bench.js';
import { plain } from '../../lib/format/text.js';

const measured: Fidelity = {
  meanKld: 0.000412,
  medianKld: 0.0002,
  kld99: 0.0041,
  kld999: 0.03,
  maxKld: 0.093,
  sameTopP: 99.412,
  pplRatio: 1.001985,
  rmsDp: 0.512,
  uncertainty: { meanKld: 0.00001, sameTopP: 0.05, pplRatio: 0.000401, rmsDp: 0.01 },
  chunks: 7,
  from: 'statistics',
};
const row = (name: string, f: Fidelity): FidelityRow => ({ name, ...f, ...fidelityVerdict(f) });

const result = (over: Partial<BenchResult>): BenchResult => ({
  schema: BENCH_SCHEMA,
  packageVersion: '0.0.0',
  generatedAt: '2026-12-06T00:00:00.000Z',
  mode: 'fidelity',
  command: ['llama-perplexity', '-m', 'm.gguf'],
  rounds: 1,
  host: null,
  stock: [],
  profiles: [],
  runs: [],
  records: [],
  speed: null,
  fidelity: [],
  provenance: 'measured',
  interval: { method: 'paired t interval on log ratios', confidence: 0.95 },
  stop: { reason: 'rounds', detail: 'every profile compared', signal: null },
  partial: false,
  failure: null,
  validity: { valid: true, reason: null, affected: null, backends: [] },
  ...over,
});

const tableOf = (text: string) => text.split('\n').filter((l) => l.startsWith('|'));

describe('the fidelity table', () => {
  it("every statistic with its ±, the control's row first; a control within tolerance says nothing more", () => {
    const control = row('stock (control)', { ...measured, meanKld: 0, uncertainty: { ...measured.uncertainty } });
    const text = formatBench(result({ fidelity: [row('host-family', measured)], control }), plain);
    expect(tableOf(text)).toEqual([
      '| profile | mean KLD | median KLD | 99 % KLD | 99.9 % KLD | same top p | PPL ratio | RMS Δp | verdict |',
      '|---|---|---|---|---|---|---|---|---|',
      '| stock (control) | 0.000000 ± 0.000010 | 0.000200 | 0.004100 | 0.030000 | 99.412 ± 0.050 % | 1.001985 ± 0.000401 | 0.512 ± 0.010 % | within tolerance |',
      '| host-family | 0.000412 ± 0.000010 | 0.000200 | 0.004100 | 0.030000 | 99.412 ± 0.050 % | 1.001985 ± 0.000401 | 0.512 ± 0.010 % | within tolerance |',
    ]);
    expect(text).toContain(
      'Tolerance: mean KLD ≤ 0.001, same top token ≥ 99 %, PPL ratio within 1 ± 0.01; ± as llama-perplexity prints it.',
    );
    expect(text).not.toContain('The control');
  });

  it('a control that differs is said: no profile can be told from that noise', () => {
    const control = row('stock (control)', { ...measured, meanKld: 0.002 });
    const text = formatBench(result({ fidelity: [row('host-family', measured)], control }), plain);
    expect(text.split('\n').at(-1)).toBe(
      'The control (stock against its own logits) differs: the tool does not repeat itself on this machine, so a profile cannot be told from that noise.',
    );
  });

  it('a result written before the ± and RMS Δp (attached to a report) reads – there', () => {
    const older = {
      name: 'host-family',
      meanKld: 0,
      kld99: null,
      maxKld: null,
      sameTopP: 100,
      pplRatio: 1,
      chunks: 1,
      verdict: 'within-tolerance',
      reasons: [],
    } as unknown as FidelityRow;
    expect(tableOf(formatBench(result({ fidelity: [older] }), plain)).at(-1)).toBe(
      '| host-family | 0.000000 | – | – | – | 100.000 % | 1.000000 | – | within tolerance |',
    );
  });
});

describe('the warm-up line of --node-llama-cpp', () => {
  const child = (seconds: number | null): Partial<ChildResult> => ({
    pp: { tokens: 32, seconds: [0.1] },
    tg: { tokens: 8, seconds: [0.1] },
    ...(seconds === null ? {} : { warmup: { seconds } }),
  });
  const nlc = (records: BenchResult['records']) =>
    formatBench(
      result({
        mode: 'node-llama-cpp',
        fidelity: null,
        speed: [],
        profiles: [{ name: 'apple9', profile: {}, warnings: [], expected: [] }] as unknown as BenchResult['profiles'],
        records,
      }),
      plain,
    );

  it("each side's median over its rounds, stock first, after the table", () => {
    const text = nlc([
      { round: 1, side: 'stock', records: [child(0.41)] },
      { round: 1, side: 'apple9', records: [child(0.5)] },
      { round: 2, side: 'apple9', records: [child(0.43)] },
      { round: 2, side: 'stock', records: [child(0.3)] },
      { round: 3, side: 'stock', records: [child(0.9)] },
      { round: 3, side: 'apple9', records: [child(0.4)] },
    ]);
    expect(text).toContain(
      '\n\nWarm-up (pipeline compile) per side: stock 0.41 s, apple9 0.43 s (medians over rounds).',
    );
  });

  it('records written before the warm-up give no line; a side without any is left out', () => {
    expect(nlc([{ round: 1, side: 'stock', records: [child(null)] }])).not.toContain('Warm-up');
    expect(
      nlc([
        { round: 1, side: 'stock', records: [child(0.2)] },
        { round: 1, side: 'apple9', records: [child(null)] },
      ]),
    ).toContain('Warm-up (pipeline compile) per side: stock 0.20 s (medians over rounds).');
  });
});
