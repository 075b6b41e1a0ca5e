// lib/core/words.ts: the count with the form that agrees with it.
import { describe, expect, it } from 'vitest';
import { plural } from '../../lib/core/words.js';

describe('plural', () => {
  it('one is singular; none and many are plural', () => {
    expect([0, 1, 2, 11].map((n) => plural(n, 'answer changes', 'answers change'))).toEqual([
      '0 answers change',
      '1 answer changes',
      '2 answers change',
      '11 answers change',
    ]);
  });
});
