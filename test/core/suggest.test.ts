// "Did you mean" (lib/core/suggest.ts): a typo within a few edits, or a name cut short that begins one candidate only;
// and the one message every enumerated CLI option gives for a value it does not take.
import { describe, expect, it } from 'vitest';
import { choiceMessage, closest, orList } from '../../lib/core/suggest.js';

describe('closest', () => {
  it.each<[string, readonly string[], string | null]>([
    ['audti', ['audit', 'doctor'], 'audit'],
    ['--verison', ['--help', '--version', '--json'], '--version'],
    ['CURENT', ['legacy', 'current'], 'current'],
    // Cut short: the one candidate it begins, from three characters on.
    ['llama', ['llama.cpp', 'mlx', 'all'], 'llama.cpp'],
    ['lla', ['llama.cpp', 'mlx', 'all'], 'llama.cpp'],
    ['ll', ['llama.cpp', 'mlx'], null],
    // Two candidates begin with it: no guess.
    ['pro', ['probe', 'profiles'], null],
    ['device-b', ['device-b6673', 'device-b6968', 'device'], null],
    // Longer than a candidate is no prefix of it.
    ['tensorflow', ['llama.cpp', 'mlx', 'all'], null],
  ])('%s among %j: %s', (input, candidates, expected) => {
    expect(closest(input, candidates)).toBe(expected);
  });

  it('an edit wins over a prefix', () => {
    expect(closest('mlxx', ['mlx', 'mlxxyz'])).toBe('mlx');
  });
});

describe('choiceMessage', () => {
  it('lists the values, says what was given, and the one meant', () => {
    expect(choiceMessage('--engine', 'llama', ['llama.cpp', 'mlx', 'all'])).toBe(
      "--engine takes llama.cpp, mlx or all, got 'llama' (did you mean 'llama.cpp'?)",
    );
    expect(choiceMessage('--color', 'sometimes', ['auto', 'always', 'never'])).toBe(
      "--color takes auto, always or never, got 'sometimes'",
    );
    expect(choiceMessage('--rules', 'curent', ['legacy', 'current'], ', or a release like b4753')).toBe(
      "--rules takes legacy or current, or a release like b4753, got 'curent' (did you mean 'current'?)",
    );
  });

  it('quotes at most 40 characters of what was given', () => {
    expect(choiceMessage('--engine', 'x'.repeat(100), ['mlx'])).toBe(
      `--engine takes mlx, got '${'x'.repeat(40)}… (100 characters)'`,
    );
  });

  it('orList joins with commas and a last "or"', () => {
    expect([orList([]), orList(['a']), orList(['a', 'b']), orList(['a', 'b', 'c'])]).toEqual([
      '',
      'a',
      'a or b',
      'a, b or c',
    ]);
  });
});
