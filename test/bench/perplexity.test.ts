// llama-perplexity's KL-divergence output (lib/bench/perplexity.ts): the chunk rows and the statistics section as
// kl_divergence() in tools/perplexity/perplexity.cpp prints them, the verdict at both sides of every tolerance, and
// the arguments bench sets itself.
import { describe, expect, it } from 'vitest';
import {
  FIDELITY_TOLERANCE,
  fidelityVerdict,
  parseKlDivergence,
  KLD_ROUNDING,
  perplexityArgs,
  tooShortMessage,
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
      medianKld: null,
      kld99: null,
      kld999: null,
      maxKld: null,
      sameTopP: 98.5,
      pplRatio: Math.exp(0.01),
      rmsDp: 0.5,
      // The row's ±; the PPL ratio's derived from the ln ratio's, as the tool derives it in its statistics.
      uncertainty: { meanKld: 0, sameTopP: 0, pplRatio: Math.exp(0.01) * 0.00003, rmsDp: 0 },
      chunks: 2,
      from: 'last-row',
    });
  });

  it('with the statistics section, its values and their ± win; nan uncertainties are read past', () => {
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
      medianKld: 0.0002,
      kld99: 0.0041,
      kld999: 0.03,
      maxKld: 0.093,
      sameTopP: 99.412,
      pplRatio: 1.001985,
      rmsDp: 0.512,
      uncertainty: { meanKld: 0.00001, sameTopP: 0.05, pplRatio: 0.000401, rmsDp: 0.01 },
      chunks: 1,
      from: 'statistics',
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
      medianKld: null,
      kld99: null,
      kld999: null,
      maxKld: null,
      sameTopP: 99.5,
      pplRatio: Math.exp(0.01),
      rmsDp: 0.5,
      uncertainty: { meanKld: 0.00001, sameTopP: 0.1, pplRatio: Math.exp(0.01) * 0.00003, rmsDp: 0 },
      chunks: 2,
      from: 'statistics',
    });
  });
});

describe('one run, numbers a KL divergence can be', () => {
  const stats = (...lines: string[]) =>
    [HEADER, row(1, '   1.9283', '   0.00000', '   0.00000', '0.000', '100.000'), '', ...lines].join('\n');
  const error = (message: string) => ({ name: 'BenchError', code: 'ERR_BENCH_OUTPUT', message });

  it('a statistic printed twice is two runs in one text: refused, never one of them picked', () => {
    const twice = stats('Mean    KLD:   0.000100 ±   0.000010', 'Mean    KLD:   0.900000 ±   0.000010');
    expect(caught(() => parseKlDivergence(twice))).toEqual(
      error('llama-perplexity printed "Mean KLD" twice (two runs\' output?): bench reads one run'),
    );
    expect(
      caught(() => parseKlDivergence(stats('Same top p: 99.000 ± 0.100 %', 'Same top p: 10.000 ± 0.100 %'))),
    ).toEqual(error('llama-perplexity printed "Same top p" twice (two runs\' output?): bench reads one run'));
  });

  it('a chunk row after the statistics, or a chunk number that does not grow, is refused', () => {
    const late = `${stats('Mean    KLD:   0.000100 ±   0.000010')}\n${row(2, '   1.9', '   0.0', '   0.5', '0.0', '100.000')}`;
    expect(caught(() => parseKlDivergence(late))).toEqual(
      error(
        `llama-perplexity printed a chunk row after its statistics (two runs' output?): ${row(2, '   1.9', '   0.0', '   0.5', '0.0', '100.000').trim()}`,
      ),
    );
    const again = [
      HEADER,
      row(2, '   1.9', '   0.0', '   0.0', '0.0', '100.000'),
      row(2, '   1.9', '   0.0', '   0.5', '0.0', '50.000'),
    ];
    expect(caught(() => parseKlDivergence(again.join('\n')))).toEqual(
      error("llama-perplexity printed chunk 2 after chunk 2 (two runs' output?)"),
    );
    const back = [
      HEADER,
      row(3, '   1.9', '   0.0', '   0.0', '0.0', '100.000'),
      row(1, '   1.9', '   0.0', '   0.5', '0.0', '50.000'),
    ];
    expect(caught(() => parseKlDivergence(back.join('\n')))).toEqual(
      error("llama-perplexity printed chunk 1 after chunk 3 (two runs' output?)"),
    );
  });

  it("a KL divergence below the tool's own rounding (one 16-bit step of 16 nats) is refused; -0 and rounding are not", () => {
    expect(KLD_ROUNDING).toBe(16 / 65535);
    expect(parseKlDivergence(stats('Mean    KLD:  -0.000000 ±   0.000000')).meanKld).toBe(-0);
    expect(parseKlDivergence(stats('Mean    KLD:  -0.000244 ±   0.000000')).meanKld).toBe(-0.000244);
    expect(caught(() => parseKlDivergence(stats('Mean    KLD:  -0.000245 ±   0.000000')))).toEqual(
      error('llama-perplexity printed a mean KLD of -0.000245: a KL divergence is never negative'),
    );
    expect(caught(() => parseKlDivergence(stats('Median  KLD:  -0.500000')))).toEqual(
      error('llama-perplexity printed a median KLD of -0.5: a KL divergence is never negative'),
    );
    expect(caught(() => parseKlDivergence(stats('99.9%   KLD:  -1.000000')))).toEqual(
      error('llama-perplexity printed a 99.9% KLD of -1: a KL divergence is never negative'),
    );
    expect(caught(() => parseKlDivergence(stats('99.0%   KLD:  -0.001000')))).toEqual(
      error('llama-perplexity printed a 99.0% KLD of -0.001: a KL divergence is never negative'),
    );
    expect(caught(() => parseKlDivergence(stats('Maximum KLD:  -0.001000')))).toEqual(
      error('llama-perplexity printed a maximum KLD of -0.001: a KL divergence is never negative'),
    );
    const rowNegative = `${HEADER}\n${row(1, '   1.9', '   0.0', '  -0.01000', '0.0', '100.000')}`;
    expect(caught(() => parseKlDivergence(rowNegative))).toEqual(
      error('llama-perplexity printed a mean KLD of -0.01: a KL divergence is never negative'),
    );
  });

  it('a same-top-token rate outside 0–100 % is refused, 100 % itself is not', () => {
    expect(parseKlDivergence(stats('Same top p: 100.000 ± 0.000 %')).sameTopP).toBe(100);
    expect(caught(() => parseKlDivergence(stats('Same top p: 100.001 ± 0.000 %')))).toEqual(
      error('llama-perplexity printed a same-top-token rate of 100.001 %: a rate is from 0 to 100 %'),
    );
    expect(
      caught(() => parseKlDivergence(`${HEADER}\n${row(1, '   1.9', '   0.0', '   0.0', '0.0', '-1.000')}`)),
    ).toEqual(error('llama-perplexity printed a same-top-token rate of -1 %: a rate is from 0 to 100 %'));
  });

  it('a PPL ratio of 0 or below is refused; one just above 0 is read', () => {
    expect(caught(() => parseKlDivergence(stats('Mean PPL(Q)/PPL(base)         :   0.000000 ±   0.000401')))).toEqual(
      error('llama-perplexity printed a PPL ratio of 0: a ratio is above 0'),
    );
    expect(parseKlDivergence(stats('Mean PPL(Q)/PPL(base)         :   0.000001 ±   0.000401')).pplRatio).toBe(1e-6);
  });

  it('a statistic the result needs printed as nan is no result', () => {
    expect(caught(() => parseKlDivergence(stats('Mean    KLD:        nan ±        nan')))).toEqual(
      error("llama-perplexity's statistics have no number for meanKld"),
    );
  });
});

describe("the tool's own words for a text too short", () => {
  it('its two lines, escaped and clipped; null when it said no such thing', () => {
    const said = [
      'perplexity: tokenizing the input ..',
      'perplexity: you need at least 128 tokens to evaluate perplexity with a context of 64',
      'perplexity: the data file you provided tokenizes to only 40 tokens',
      'llama_perf_context_print: load time = 1 ms',
    ].join('\n');
    expect(tooShortMessage(said)).toBe(
      'perplexity: you need at least 128 tokens to evaluate perplexity with a context of 64; perplexity: the data file you provided tokenizes to only 40 tokens',
    );
    expect(tooShortMessage('x: you need at least 2 tokens \u001b[31mred\u001b[0m')).toBe(
      'x: you need at least 2 tokens \\u001b[31mred\\u001b[0m',
    );
    expect(tooShortMessage(`you need at least 1 tokens ${'a'.repeat(300)}`)).toBe(
      `you need at least 1 tokens ${'a'.repeat(173)}… (327 characters)`,
    );
    expect(tooShortMessage('failed to open x.kld\n')).toBeNull();
    // As llama-perplexity prints it: the log's time and level before each line are the log's, not the tool's words.
    expect(
      tooShortMessage(
        '0.00.752.286 E perplexity: you need at least 128 tokens to evaluate perplexity with a context of 64\n0.00.752.311 E perplexity: the data file you provided tokenizes to only 6 tokens\n',
      ),
    ).toBe(
      'perplexity: you need at least 128 tokens to evaluate perplexity with a context of 64; perplexity: the data file you provided tokenizes to only 6 tokens',
    );
    expect(tooShortMessage('E you need at least 2 tokens')).toBe('you need at least 2 tokens');
    expect(tooShortMessage('X you need at least 2 tokens')).toBe('X you need at least 2 tokens');
    // Its two lines, never more (a third, repeated, is left out).
    expect(tooShortMessage(`${said}\nperplexity: you need at least 9 tokens`)).toBe(
      'perplexity: you need at least 128 tokens to evaluate perplexity with a context of 64; perplexity: the data file you provided tokenizes to only 40 tokens',
    );
  });
});

describe('the verdict, at both sides of each tolerance', () => {
  const exact: Fidelity = {
    meanKld: 0,
    medianKld: 0,
    kld99: 0,
    kld999: 0,
    maxKld: 0,
    sameTopP: 100,
    pplRatio: 1,
    rmsDp: 0,
    uncertainty: { meanKld: 0, sameTopP: 0, pplRatio: 0, rmsDp: 0 },
    chunks: 4,
    from: 'statistics',
  };
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
