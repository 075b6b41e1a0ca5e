// The shape readers (lib/core/shape.ts): each returns the value with its type or hands the field and what it must be
// to `fail`, with the wording every reader of sent files shares; both sides of every bound.
import { describe, expect, it } from 'vitest';
import { shapeReader } from '../../lib/core/shape.js';

class Refused extends Error {
  constructor(
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${field} ${problem}`);
  }
}
const s = shapeReader((field, problem) => {
  throw new Refused(field, problem);
});
function refusal(fn: () => unknown): [string, string] {
  try {
    fn();
  } catch (e) {
    if (e instanceof Refused) return [e.field, e.problem];
    throw e;
  }
  throw new Error('accepted');
}

describe('shape readers', () => {
  it('object, list, text, bool: the value when it is one, else the field and what it must be', () => {
    expect([
      s.object({ a: 1 }, 'o'),
      s.list([1, 2], 'l', (x) => (x as number) * 2),
      s.text('t', 't'),
      s.bool(false, 'b'),
    ]).toEqual([{ a: 1 }, [2, 4], 't', false]);
    expect(refusal(() => s.object([], 'o'))).toEqual(['o', 'must be an object, got an array']);
    expect(refusal(() => s.object(null, 'o'))).toEqual(['o', 'must be an object, got null']);
    expect(refusal(() => s.list({}, 'l', (x) => x))).toEqual(['l', 'must be an array, got an object']);
    expect(refusal(() => s.list(['a', 1], 'l', (x, f) => s.text(x, f)))).toEqual([
      'l[1]',
      'must be a string, got number 1',
    ]);
    expect(refusal(() => s.text(1, 't'))).toEqual(['t', 'must be a string, got number 1']);
    expect(refusal(() => s.bool('true', 'b'))).toEqual(['b', 'must be true or false, got the string "true"']);
  });

  it('…OrNull: null is null, anything else is read as the reader without it', () => {
    expect([s.textOrNull(null, 't'), s.boolOrNull(null, 'b'), s.numberOrNull(null, 'n')]).toEqual([null, null, null]);
    expect([s.textOrNull('x', 't'), s.boolOrNull(true, 'b'), s.numberOrNull(2, 'n')]).toEqual(['x', true, 2]);
    expect(refusal(() => s.textOrNull(undefined, 't'))).toEqual(['t', 'must be a string, got undefined']);
    expect(refusal(() => s.boolOrNull(0, 'b'))).toEqual(['b', 'must be true or false, got number 0']);
    expect(refusal(() => s.numberOrNull('1', 'n'))).toEqual(['n', 'must be a finite number, got the string "1"']);
  });

  it('count: a whole number ≥ 0 (0 yes, -1 no, 1.5 no, beyond 2^53 no)', () => {
    expect([s.count(0, 'c'), s.count(7, 'c')]).toEqual([0, 7]);
    for (const bad of [-1, 1.5, 2 ** 53, Number.NaN, '1'])
      expect(refusal(() => s.count(bad, 'c'))[1]).toMatch(/^must be a whole number ≥ 0, got /);
  });

  it('number: finite, within min and max inclusive, above `above` exclusive; both sides of each bound', () => {
    const b = { min: 0, max: 100 };
    expect([s.number(0, 'n', b), s.number(100, 'n', b), s.number(0.5, 'n', { above: 0 })]).toEqual([0, 100, 0.5]);
    expect(refusal(() => s.number(-0.1, 'n', b))).toEqual([
      'n',
      'must be a finite number at least 0 and at most 100, got number -0.1',
    ]);
    expect(refusal(() => s.number(100.1, 'n', b))).toEqual([
      'n',
      'must be a finite number at least 0 and at most 100, got number 100.1',
    ]);
    expect(refusal(() => s.number(0, 'n', { above: 0 }))).toEqual([
      'n',
      'must be a finite number above 0, got number 0',
    ]);
    expect(refusal(() => s.number(Number.POSITIVE_INFINITY, 'n'))).toEqual([
      'n',
      'must be a finite number, got number Infinity',
    ]);
    expect(refusal(() => s.number(Number.NaN, 'n'))).toEqual(['n', 'must be a finite number, got number NaN']);
  });

  it('oneOf: one of the values, each quoted when refused', () => {
    expect(s.oneOf('b', 'v', ['a', 'b'] as const)).toBe('b');
    expect(refusal(() => s.oneOf('c', 'v', ['a', 'b'] as const))).toEqual([
      'v',
      "must be one of 'a', 'b', got the string \"c\"",
    ]);
    expect(refusal(() => s.oneOf(1, 'v', ['a'] as const))).toEqual(['v', "must be one of 'a', got number 1"]);
  });

  it('fail is the one the readers were made with', () => {
    expect(refusal(() => s.fail('f', 'rule'))).toEqual(['f', 'rule']);
  });
});
