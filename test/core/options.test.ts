// lib/core/options.ts: every API function's options read once and checked by kind, each mistake an
// InvalidOptionsError naming the option (with "did you mean" for an unknown one).
import { describe, expect, it } from 'vitest';
import { InvalidOptionsError } from '../../lib/core/errors.js';
import { checkOptions, optionFailure } from '../../lib/core/options.js';
import { thrown } from '../support/helpers.js';

const KINDS = { allDevices: 'boolean', snapshot: 'string', limit: 'number', env: 'object', any: 'any' } as const;
const failure = (f: () => unknown) => {
  const e = thrown(f);
  expect(e).toBeInstanceOf(InvalidOptionsError);
  return [(e as InvalidOptionsError).option, (e as InvalidOptionsError).message];
};

describe('checkOptions', () => {
  it('undefined and null are no options; a copy of the known ones otherwise', () => {
    expect([checkOptions('probe', undefined, KINDS), checkOptions('probe', null, KINDS)]).toEqual([{}, {}]);
    const given = { allDevices: true, snapshot: 's', limit: 2, env: { A: 'b' }, any: [1] };
    const copy = checkOptions<typeof given>('probe', given, KINDS);
    expect(copy).toEqual(given);
    expect(copy).not.toBe(given);
    expect(copy.env).not.toBe(given.env);
    expect(copy.any).toBe(given.any);
  });

  it('each option of the wrong kind names itself and what it got; undefined is as if not given', () => {
    expect(checkOptions('probe', { allDevices: undefined }, KINDS)).toEqual({ allDevices: undefined });
    expect(failure(() => checkOptions('probe', { allDevices: 'yes' }, KINDS))).toEqual([
      'allDevices',
      `probe() option 'allDevices' must be a boolean, got the string "yes"`,
    ]);
    expect(failure(() => checkOptions('probe', { env: [] }, KINDS))).toEqual([
      'env',
      `probe() option 'env' must be an object, got an array`,
    ]);
  });

  it('an unknown option is named, with the one meant and the list', () => {
    expect(failure(() => checkOptions('probe', { allDevice: true }, KINDS))).toEqual([
      'allDevice',
      "probe() has no option 'allDevice' (did you mean 'allDevices'?); its options are allDevices, snapshot, limit, env, any",
    ]);
  });

  it('something that is no options object', () => {
    expect(failure(() => checkOptions('probe', 5, KINDS))).toEqual([
      'options',
      'probe() takes an options object, got number 5',
    ]);
    expect(failure(() => checkOptions('probe', [], KINDS))[0]).toBe('options');
  });

  it('a getter that throws is that option’s error, and a getter runs once', () => {
    let reads = 0;
    const counted = {
      get snapshot() {
        reads++;
        return 'x';
      },
    };
    expect(checkOptions('probe', counted, KINDS)).toEqual({ snapshot: 'x' });
    expect(reads).toBe(1);
    const throwing = {
      get limit(): number {
        throw new Error('no');
      },
    };
    expect(failure(() => checkOptions('probe', throwing, KINDS))).toEqual([
      'limit',
      "probe() option 'limit' cannot be read (no)",
    ]);
  });
});

describe('optionFailure', () => {
  it('names the option, or the options as a whole', () => {
    const fail = optionFailure('doctor');
    expect(failure(() => fail('env.HOME', 'must be a string'))).toEqual([
      'env.HOME',
      "doctor() option 'env.HOME' must be a string",
    ]);
    expect(failure(() => fail('', 'cannot be read'))).toEqual(['options', 'doctor() options cannot be read']);
  });
});
