import { InvalidOptionsError } from './errors.js';

type Kind = 'boolean' | 'string' | 'number' | 'object' | 'any';

/**
 * Checks an options argument: an object (or undefined) whose keys are all known and of the stated kind. Throws
 * InvalidOptionsError naming the option, so `probe({ allDevices: 'yes' })` fails before anything runs.
 */
export function checkOptions<T extends object>(fn: string, options: unknown, kinds: Record<string, Kind>): T {
  if (options === undefined || options === null) return {} as T;
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw new InvalidOptionsError('options', `${fn}() takes an options object, got ${describe(options)}`);
  }
  for (const [key, value] of Object.entries(options)) {
    const kind = kinds[key];
    if (kind === undefined) {
      throw new InvalidOptionsError(key, `${fn}() has no option '${key}'; its options are ${Object.keys(kinds).join(', ')}`);
    }
    if (value === undefined || kind === 'any') continue;
    const ok = kind === 'object' ? typeof value === 'object' && value !== null && !Array.isArray(value) : typeof value === kind;
    if (!ok) {
      throw new InvalidOptionsError(key, `${fn}() option '${key}' must be ${kind === 'object' ? 'an object' : `a ${kind}`}, got ${describe(value)}`);
    }
  }
  return options as T;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'string' ? `the string ${JSON.stringify(value)}` : `${typeof value} ${String(value)}`;
}
