// lib/core/words.ts: the count with the form that agrees with it, and the one word for an architecture a report lacks.
import { describe, expect, it } from 'vitest';
import { architectureText, plural } from '../../lib/core/words.js';

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

describe('architectureText', () => {
  it('the name, or "unrecorded" where the report holds none', () => {
    expect([architectureText('applegpu_g13d'), architectureText(null)]).toEqual(['applegpu_g13d', 'unrecorded']);
  });
});
