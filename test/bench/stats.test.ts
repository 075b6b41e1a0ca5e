// The statistics of lib/bench/stats.ts: the median, the spread, and each round's order.
import { describe, expect, it } from 'vitest';
import { median, rotation, spreadOf } from '../../lib/bench/stats.js';

describe('stats', () => {
  it('median: the middle value, the mean of the middle two, NaN for none; the input is not reordered', () => {
    const values = [3, 1, 2];
    expect([median(values), median([4, 1, 3, 2]), median([5]), median([])]).toEqual([2, 2.5, 5, Number.NaN]);
    expect(values).toEqual([3, 1, 2]);
  });

  it('spread: lowest and highest, null for none', () => {
    expect([spreadOf([1.2, 0.9, 1.1]), spreadOf([])]).toEqual([
      { min: 0.9, max: 1.2 },
      { min: null, max: null },
    ]);
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
