// lib/core/input.ts's wording of what an error got: one function for every "…; got X" of the package (checkOptions'
// "takes an options object, got …" and predictGates' "…; got …" alike).
import { describe, expect, it } from 'vitest';
import { predictGates } from '../../lib/engines/index.js';
import { describeValue, QUOTE_LIMIT } from '../../lib/core/input.js';
import { InvalidOptionsError } from '../../lib/core/errors.js';
import { probe } from '../../lib/index.js';

describe('describeValue', () => {
  it.each<[string, unknown, string]>([
    ['null', null, 'null'],
    ['undefined', undefined, 'undefined'],
    ['a string', 'M1', 'the string "M1"'],
    ['an empty string', '', 'the string ""'],
    ['a number', 5, 'number 5'],
    ['NaN', Number.NaN, 'number NaN'],
    ['a boolean', false, 'boolean false'],
    ['a BigInt', 1009n, 'bigint 1009n'],
    ['a symbol', Symbol('s'), 'symbol Symbol(s)'],
    ['a function', () => 1, 'a function'],
    ['an array', [1], 'an array'],
    ['an object', { a: 1 }, 'an object'],
    [
      'a Proxy whose traps throw',
      new Proxy(
        {},
        {
          get: () => {
            throw new Error('x');
          },
        },
      ),
      'an object',
    ],
  ])('%s', (_what, value, shown) => {
    expect(describeValue(value)).toEqual(shown);
  });

  it('quotes at most QUOTE_LIMIT characters of a string', () => {
    expect(describeValue('x'.repeat(QUOTE_LIMIT))).toEqual(`the string "${'x'.repeat(QUOTE_LIMIT)}"`);
    expect(describeValue('x'.repeat(QUOTE_LIMIT + 1))).toEqual(
      `the string "${'x'.repeat(QUOTE_LIMIT)}"… (${QUOTE_LIMIT + 1} characters)`,
    );
  });

  it('is the wording of both the options check and predictGates', () => {
    const messageOf = (run: () => unknown): string => {
      try {
        run();
      } catch (err) {
        expect(err).toBeInstanceOf(InvalidOptionsError);
        return (err as Error).message;
      }
      throw new Error('did not throw');
    };
    expect(messageOf(() => probe('yes' as never))).toEqual('probe() takes an options object, got the string "yes"');
    expect(messageOf(() => predictGates('yes' as never, 'mlx'))).toEqual(
      'device must be a DeviceReport object with a "families" object; got the string "yes"',
    );
  });
});
