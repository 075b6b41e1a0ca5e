// The statistics of lib/bench/stats.ts: Student's t, the paired speed-up and its interval, the median, the order of
// each round; and, on seeded noise, how often the interval covers the true speed-up.
import { describe, expect, it } from 'vitest';
import {
  CONFIDENCE,
  geometricMean,
  median,
  pairedSpeedup,
  relativeHalfWidth,
  rotation,
  tCritical,
  tTwoSidedProbability,
} from '../../lib/bench/stats.js';

const round6 = (n: number) => Math.round(n * 1e6) / 1e6;

describe("Student's t", () => {
  it('two-sided 95 % critical values match the published table (df 1, 2, 3, 4, 5, 9, 29, 99) to 6 places', () => {
    // Student's t table, two-sided 0.05: 12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.262157, 2.045230, 1.984217.
    expect([1, 2, 3, 4, 5, 9, 29, 99].map((df) => round6(tCritical(df)))).toEqual([
      12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.262157, 2.04523, 1.984217,
    ]);
    expect(CONFIDENCE).toBe(0.95);
  });

  it('other confidences: 99 % on 4 df, 90 % on 10 df; the probability is 0 at 0 and rises to 1', () => {
    expect([round6(tCritical(4, 0.99)), round6(tCritical(10, 0.9))]).toEqual([4.604095, 1.812461]);
    expect([
      tTwoSidedProbability(0, 3),
      round6(tTwoSidedProbability(1e9, 3)),
      round6(tTwoSidedProbability(1e9, 4)),
    ]).toEqual([0, 1, 1]);
    // df 1 is the Cauchy distribution: P(|T| ≤ 1) = 1/2; df 2: P(|T| ≤ t) = t / √(2 + t²).
    expect([round6(tTwoSidedProbability(1, 1)), round6(tTwoSidedProbability(2, 2))]).toEqual([
      0.5,
      round6(2 / Math.sqrt(6)),
    ]);
  });

  it('degrees of freedom must be a whole number ≥ 1', () => {
    for (const df of [0, -1, 1.5, Number.NaN])
      expect(() => tCritical(df)).toThrow(new RangeError(`degrees of freedom must be a whole number ≥ 1: ${df}`));
  });
});

describe('the paired speed-up', () => {
  it('centre: the geometric mean of the ratios; interval: t on the log ratios; the verdict from where 1 lies', () => {
    const ratios = [1.1, 1.2, 1.15];
    const logs = ratios.map(Math.log);
    const mean = logs.reduce((a, b) => a + b) / 3;
    const sd = Math.sqrt(logs.reduce((a, l) => a + (l - mean) ** 2, 0) / 2);
    const half = 4.302652729749462 * (sd / Math.sqrt(3));
    const e = pairedSpeedup(ratios);
    expect({ ...e, centre: round6(e.centre!), low: round6(e.low!), high: round6(e.high!) }).toEqual({
      centre: round6(Math.exp(mean)),
      low: round6(Math.exp(mean - half)),
      high: round6(Math.exp(mean + half)),
      rounds: 3,
      verdict: 'faster',
    });
  });

  it('faster above 1, slower below, no difference shown when the interval holds 1 (both sides of each bound)', () => {
    expect(pairedSpeedup([1.5, 1.6, 1.4, 1.55]).verdict).toBe('faster');
    expect(pairedSpeedup([0.6, 0.62, 0.61]).verdict).toBe('slower');
    expect(pairedSpeedup([0.9, 1.1, 1.0]).verdict).toBe('no-difference-shown');
    // Identical ratios: a zero-width interval at the ratio itself.
    expect(pairedSpeedup([2, 2])).toEqual({ centre: 2, low: 2, high: 2, rounds: 2, verdict: 'faster' });
    expect(pairedSpeedup([0.5, 0.5])).toEqual({ centre: 0.5, low: 0.5, high: 0.5, rounds: 2, verdict: 'slower' });
    expect(pairedSpeedup([1, 1])).toEqual({ centre: 1, low: 1, high: 1, rounds: 2, verdict: 'no-difference-shown' });
  });

  it('one round: the ratio, no interval, said so; none: nothing; a ratio that is not a positive number is no round', () => {
    expect(pairedSpeedup([1.02])).toEqual({ centre: 1.02, low: null, high: null, rounds: 1, verdict: 'no-interval' });
    expect(pairedSpeedup([])).toEqual({ centre: null, low: null, high: null, rounds: 0, verdict: 'no-interval' });
    expect(pairedSpeedup([0, -1, Number.NaN, Number.POSITIVE_INFINITY, 2])).toEqual({
      centre: 2,
      low: null,
      high: null,
      rounds: 1,
      verdict: 'no-interval',
    });
  });

  it('relative half-width: the larger side of the interval over its centre; infinite without an interval', () => {
    expect(round6(relativeHalfWidth({ centre: 2, low: 1.6, high: 2.5, rounds: 5, verdict: 'faster' }))).toBe(0.25);
    expect(round6(relativeHalfWidth({ centre: 2, low: 1.2, high: 2.2, rounds: 5, verdict: 'faster' }))).toBe(0.4);
    expect(relativeHalfWidth(pairedSpeedup([1.5]))).toBe(Number.POSITIVE_INFINITY);
    expect(relativeHalfWidth(pairedSpeedup([]))).toBe(Number.POSITIVE_INFINITY);
    // Any one bound missing is no interval.
    const full = { centre: 2, low: 1.6, high: 2.5, rounds: 5, verdict: 'faster' } as const;
    expect([{ centre: null }, { low: null }, { high: null }].map((m) => relativeHalfWidth({ ...full, ...m }))).toEqual([
      Number.POSITIVE_INFINITY,
      Number.POSITIVE_INFINITY,
      Number.POSITIVE_INFINITY,
    ]);
  });

  it('geometric mean: of positive numbers; NaN for none or for any that is not a positive finite number', () => {
    expect([round6(geometricMean([1, 4])), round6(geometricMean([2])), geometricMean([])]).toEqual([2, 2, Number.NaN]);
    expect([geometricMean([1, 0]), geometricMean([1, -2]), geometricMean([1, Number.POSITIVE_INFINITY])]).toEqual([
      Number.NaN,
      Number.NaN,
      Number.NaN,
    ]);
  });
});

/** A seeded generator (mulberry32) and standard normal deviates from it (Box–Muller). */
function normals(seed: number): () => number {
  let a = seed >>> 0;
  const uniform = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return () => Math.sqrt(-2 * Math.log(1 - uniform())) * Math.cos(2 * Math.PI * uniform());
}

describe('coverage on seeded noise: what the interval promises', () => {
  /**
   * `rows` rows of `rounds` paired rounds: each side's tokens/s drifts from round to round by the same factor (which
   * pairing cancels) and carries its own noise of `sd` (log scale); the profile's true speed-up is `truth`.
   */
  function calls(truth: number, rounds: number, sd: number, rows = 1000, seed = 7) {
    const z = normals(seed);
    let differs = 0;
    let covers = 0;
    for (let row = 0; row < rows; row++) {
      const ratios = Array.from({ length: rounds }, () => {
        const drift = Math.exp(0.2 * z());
        const stock = 100 * drift * Math.exp(sd * z());
        const patched = 100 * truth * drift * Math.exp(sd * z());
        return patched / stock;
      });
      const e = pairedSpeedup(ratios);
      if (e.verdict !== 'no-difference-shown') differs++;
      if (e.low! <= truth && truth <= e.high!) covers++;
    }
    return { differs: differs / rows, covers: covers / rows };
  }

  it('a true 1.0x is called a difference in at most 7 % of 1000 rows at 3, 5 and 10 rounds (about 5 %)', () => {
    for (const rounds of [3, 5, 10]) {
      const { differs, covers } = calls(1.0, rounds, 0.05);
      expect([differs <= 0.07, differs >= 0.03, covers >= 0.93], `${rounds} rounds: ${differs}`).toEqual([
        true,
        true,
        true,
      ]);
    }
  });

  it('a true 1.5x is found faster in nearly all of 1000 rows; a true 1.10x in most at the default 5 rounds', () => {
    expect(calls(1.5, 5, 0.05).differs).toBeGreaterThanOrEqual(0.99);
    // The default rounds' power: llama-bench's round-to-round noise on a quiet machine is a few per cent.
    expect(calls(1.1, 5, 0.03).differs).toBeGreaterThanOrEqual(0.8);
    // Three rounds would miss many of them: why the default is five.
    expect(calls(1.1, 3, 0.03).differs).toBeLessThan(calls(1.1, 5, 0.03).differs);
  });

  it('the min–max range it replaced covers a true 1.0x far less often at 3 rounds (1 − 2^(1−N) = 75 %)', () => {
    const z = normals(11);
    let excluded = 0;
    for (let row = 0; row < 1000; row++) {
      const ratios = Array.from({ length: 3 }, () => Math.exp(0.05 * z()) / Math.exp(0.05 * z()));
      if (Math.min(...ratios) > 1 || Math.max(...ratios) < 1) excluded++;
    }
    expect(excluded / 1000).toBeGreaterThan(0.2);
  });
});

describe('median and rotation', () => {
  it('median: the middle value, the mean of the middle two, NaN for none; the input is not reordered', () => {
    const values = [3, 1, 2];
    expect([median(values), median([4, 1, 3, 2]), median([5]), median([])]).toEqual([2, 2.5, 5, Number.NaN]);
    expect(values).toEqual([3, 1, 2]);
  });

  it('rotation: every side first once in as many rounds, each round a permutation', () => {
    expect([0, 1, 2, 3].map((r) => rotation(3, r))).toEqual([
      [0, 1, 2],
      [1, 2, 0],
      [2, 0, 1],
      [0, 1, 2],
    ]);
    expect(rotation(1, 5)).toEqual([0]);
  });
});
