// llama-perplexity's KL-divergence output (lib/bench/perplexity.ts): the chunk rows and the statistics section as
// kl_divergence() in tools/perplexity/perplexity.cpp prints them, the verdict at both sides of every tolerance, and
// the arguments bench sets itself.
import { describe, expect, it } from 'vitest';
import {
  FIDELITY_TOLERANCE,
  fidelityVerdict,
  parseKlDivergence,
  perplexityArgs,
  type Fidelity,
} from '../../lib/bench/perplexity.js';
import { caught } from '../support/helpers.js';

const HEADER =
  'chunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence              Δp RMS            Same top p';
/** A chunk row in the tool's printf format. */
const row = (n: number, ppl: string, ln: string, kld: string, dp: string, top: string) =>
  `${String(n).padStart(4)}    ${ppl} ±    0.3726    ${ln} ±    0.00003    ${kld} ±    0.00000     ${dp} ±  0.000 %    ${top} ±  0.000 %`;

describe('reading a run', () => {
  it('short text: only chunk rows; the last row is the result, the PPL ratio from its ln', () => {
    const text = [
      'kl_divergence: computing over 2 chunks, n_ctx=64, batch_size=64, n_seq=1',
      '',
      HEADER,
      row(1, '   1.9283', '   0.00000', '  -0.00000', '0.000', '100.000'),
      row(2, '   2.0429', '   0.01000', '   0.00125', '0.500', ' 98.500'),
    ].join('\n');
    expect(parseKlDivergence(text)).toEqual({
      meanKld: 0.00125,
      kld99: null,
      maxKld: null,
      sameTopP: 98.5,
      pplRatio: Math.exp(0.01),
      chunks: 2,
    });
  });

  it('with the statistics section, its values win; nan uncertainties are read past', () => {
    const text = [
      HEADER,
      `   1       1.9283 ±    0.3726       0.00000 ±       -nan      -0.00000 ±    0.00000     0.000 ±  0.000 %    100.000 ±  0.000 %`,
      '',
      '====== Perplexity statistics ======',
      'Mean PPL(Q)                   :   5.400700 ±   0.067339',
      'Mean PPL(base)                :   5.390000 ±   0.067000',
      'Cor(ln(PPL(Q)), ln(PPL(base))):  99.90%',
      'Mean ln(PPL(Q)/PPL(base))     :   0.001983 ±   0.000400',
      'Mean PPL(Q)/PPL(base)         :   1.001985 ±   0.000401',
      '',
      '====== KL divergence statistics ======',
      'Mean    KLD:   0.000412 ±   0.000010',
      'Maximum KLD:   0.093000',
      '99.9%   KLD:   0.030000',
      '99.0%   KLD:   0.004100',
      'Median  KLD:   0.000200',
      '',
      '====== Token probability statistics ======',
      'RMS Δp    :  0.512 ± 0.010 %',
      'Same top p: 99.412 ± 0.050 %',
    ].join('\n');
    expect(parseKlDivergence(text)).toEqual({
      meanKld: 0.000412,
      kld99: 0.0041,
      maxKld: 0.093,
      sameTopP: 99.412,
      pplRatio: 1.001985,
      chunks: 1,
    });
  });

  it('no row is no result: the tool returns 0 when it cannot read the logits', () => {
    const none = {
      name: 'BenchError',
      code: 'ERR_BENCH_OUTPUT',
      message:
        'llama-perplexity printed no KL-divergence row: it could not read the stock logits, or the text is shorter than one chunk (2 × the context size in tokens)',
    };
    expect(caught(() => parseKlDivergence('kl_divergence: failed to open /tmp/x.kld\n'))).toEqual(none);
    expect(caught(() => parseKlDivergence(''))).toEqual(none);
    expect(caught(() => parseKlDivergence(row(1, '   1.9', '      nan', '   0.1', '0.0', '100.000')))).toMatchObject({
      code: 'ERR_BENCH_OUTPUT',
    });
  });

  it('a last row with nan in any column the result needs is no result, and the message quotes the row', () => {
    const rows = [
      row(3, '   1.9', '      nan', '   0.1', '0.0', '100.000'),
      row(3, '   1.9', '   0.0100', '      nan', '0.0', '100.000'),
      row(3, '   1.9', '   0.0100', '   0.1', '0.0', '    nan'),
    ];
    for (const last of rows) {
      expect(caught(() => parseKlDivergence(`${HEADER}\n${last}  \n`))).toEqual({
        name: 'BenchError',
        code: 'ERR_BENCH_OUTPUT',
        message: `llama-perplexity's last KL-divergence row has no number: ${last.trim()}`,
      });
    }
  });

  it('a statistics line read with its indentation (a log prefix of spaces)', () => {
    const text = [
      HEADER,
      row(2, '   2.0429', '   0.01000', '   0.00125', '0.500', ' 98.500'),
      '   Mean    KLD:   0.000500 ±   0.000010',
      '  Same top p: 99.500 ± 0.100 %',
    ].join('\n');
    expect(parseKlDivergence(text)).toEqual({
      meanKld: 0.0005,
      kld99: null,
      maxKld: null,
      sameTopP: 99.5,
      pplRatio: Math.exp(0.01),
      chunks: 2,
    });
  });
});

describe('the verdict, at both sides of each tolerance', () => {
  const exact: Fidelity = { meanKld: 0, kld99: 0, maxKld: 0, sameTopP: 100, pplRatio: 1, chunks: 4 };
  const t = FIDELITY_TOLERANCE;

  it('the tolerances, in one place', () => {
    expect(t).toEqual({ meanKld: 0.001, sameTopP: 99, pplRatio: 0.01 });
  });

  it('exactly at each bound is within; one step past is not, with the reason', () => {
    expect(fidelityVerdict(exact)).toEqual({ verdict: 'within-tolerance', reasons: [] });
    const edges = { ...exact, meanKld: 0.001, sameTopP: 99, pplRatio: 1.01 };
    expect(fidelityVerdict(edges)).toEqual({ verdict: 'within-tolerance', reasons: [] });
    expect(fidelityVerdict({ ...exact, pplRatio: 0.99 })).toEqual({ verdict: 'within-tolerance', reasons: [] });
    expect(fidelityVerdict({ ...exact, meanKld: 0.0011 })).toEqual({
      verdict: 'differs',
      reasons: ['mean KLD 0.0011 is above 0.001'],
    });
    expect(fidelityVerdict({ ...exact, sameTopP: 98.9 })).toEqual({
      verdict: 'differs',
      reasons: ['same top token 98.9 % is below 99 %'],
    });
    expect(fidelityVerdict({ ...exact, pplRatio: 1.02 })).toEqual({
      verdict: 'differs',
      reasons: ['PPL ratio 1.02 is outside 1 ± 0.01'],
    });
    expect(fidelityVerdict({ ...exact, pplRatio: 0.98, meanKld: 2, sameTopP: 10 }).reasons).toEqual([
      'mean KLD 2 is above 0.001',
      'same top token 10 % is below 99 %',
      'PPL ratio 0.98 is outside 1 ± 0.01',
    ]);
  });
});

describe("llama-perplexity's arguments", () => {
  it('adds the default text when no -f is given; keeps the one given', () => {
    expect(perplexityArgs(['-m', 'm.gguf'], '/pkg/README.md')).toEqual({
      args: ['-m', 'm.gguf', '-f', '/pkg/README.md'],
      text: '/pkg/README.md',
    });
    expect(perplexityArgs(['-m', 'm', '--file', 't.txt', '-c', '64'], '/d')).toEqual({
      args: ['-m', 'm', '--file', 't.txt', '-c', '64'],
      text: 't.txt',
    });
  });

  it('refuses the options bench sets itself, and -f without a file', () => {
    for (const own of ['--kl-divergence', '--kl-divergence-base', '--kl-divergence-base=x', '--hellaswag']) {
      expect(caught(() => perplexityArgs(['-m', 'm', own], '/d'))).toEqual({
        name: 'UsageError',
        code: 'ERR_USAGE',
        message: `bench --fidelity sets ${own} itself (stock saves the logits, each profile compares): drop it`,
      });
    }
    expect(caught(() => perplexityArgs(['-m', 'm', '-f'], '/d'))).toEqual({
      name: 'UsageError',
      code: 'ERR_USAGE',
      message: "llama-perplexity's -f needs a text file",
    });
    expect(caught(() => perplexityArgs(['--file'], '/d'))).toEqual({
      name: 'UsageError',
      code: 'ERR_USAGE',
      message: "llama-perplexity's --file needs a text file",
    });
  });

  it('-f first is read as the text too; no arguments at all get the default text', () => {
    expect(perplexityArgs(['-f', 't.txt', '-m', 'm'], '/d')).toEqual({
      args: ['-f', 't.txt', '-m', 'm'],
      text: 't.txt',
    });
    expect(perplexityArgs([], '/d')).toEqual({ args: ['-f', '/d'], text: '/d' });
  });
});
