import { InvalidOptionsError } from './errors.js';
import { clip, describeValue, isObject, readInput } from './input.js';
import { didYouMean } from './suggest.js';

type Kind = 'boolean' | 'string' | 'number' | 'object' | 'function' | 'any';

/** Reports an option that cannot be used as an InvalidOptionsError naming it (`env.HOME`, `options`). */
export function optionFailure(fn: string): (field: string, problem: string) => never {
  return (field, problem) => {
    throw new InvalidOptionsError(field || 'options', `${fn}() ${field ? `option '${field}'` : 'options'} ${problem}`);
  };
}

/**
 * Checks an options argument: an object (or undefined) whose keys are all known and of the stated kind. Throws
 * InvalidOptionsError naming the option, so `probe({ allDevices: 'yes' })` fails before anything runs. The options are
 * read once (a getter runs once; one that throws is that option's error): the result is a copy, with the objects of
 * `object` options copied too. An `any` option is passed on as it is, for its own check to read.
 */
export function checkOptions<T extends object>(fn: string, options: unknown, kinds: Record<string, Kind>): T {
  if (options === undefined || options === null) return {} as T;
  const fail = optionFailure(fn);
  let keys: string[];
  try {
    if (typeof options !== 'object' || Array.isArray(options)) {
      throw new InvalidOptionsError('options', `${fn}() takes an options object, got ${describeValue(options)}`);
    }
    keys = Object.keys(options);
  } catch (err) {
    if (err instanceof InvalidOptionsError) throw err;
    return fail('', `cannot be read (${clip(err instanceof Error ? err.message : 'an error')})`);
  }
  const copy: Record<string, unknown> = {};
  for (const key of keys) {
    const kind = Object.hasOwn(kinds, key) ? kinds[key] : undefined;
    if (kind === undefined) {
      throw new InvalidOptionsError(
        key,
        `${fn}() has no option '${clip(key)}'${didYouMean(key, Object.keys(kinds))}; its options are ${Object.keys(kinds).join(', ')}`,
      );
    }
    let value: unknown;
    try {
      value = (options as Record<string, unknown>)[key];
    } catch (err) {
      return fail(key, `cannot be read (${clip(err instanceof Error ? err.message : 'an error')})`);
    }
    if (value !== undefined && kind !== 'any') {
      const ok = kind === 'object' ? isObject(value) : typeof value === kind;
      if (!ok) {
        throw new InvalidOptionsError(
          key,
          `${fn}() option '${key}' must be ${kind === 'object' ? 'an object' : `a ${kind}`}, got ${describeValue(value)}`,
        );
      }
      if (kind === 'object') value = readInput(value, fail, {}, key);
    }
    copy[key] = value;
  }
  return copy as T;
}
