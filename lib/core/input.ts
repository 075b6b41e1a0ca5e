/**
 * Untrusted input: values a caller or a file hands us are read once into plain data (a throwing getter or a Proxy
 * trap becomes a typed error naming the field) and quoted in errors with a bound (escape.ts makes them inert before
 * a human output prints them). Nothing here throws anything but what `fail` throws.
 */

/** A plain object: not null, not an array (what JSON calls an object, once read by readInput). */
export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * `table[key]` when `key` is the table's own key, else undefined: never an inherited member (`toString`,
 * `constructor`, `__proto__`) of a lookup table or of parsed input. Every lookup by a key that came from input uses it
 * (CWE-1321).
 */
export function own<T>(table: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(table, key) ? table[key] : undefined;
}

/** At most this many characters of an input are quoted in an error message. */
export const QUOTE_LIMIT = 200;

/**
 * How many elements an array of an input may have before `readInput` refuses it unread: far more than any real list
 * (a snapshot has at most 64 devices, a fleet's matrix a few thousand reports); a sparse array claiming 2^32 − 1
 * elements is refused at once instead of walked.
 */
export const INPUT_ARRAY_LIMIT = 100_000;

/** How deep `readInput` follows nested objects and arrays; no format of this package comes near it. */
export const INPUT_DEPTH_LIMIT = 64;

/** `text`, or its first QUOTE_LIMIT characters and how long it was: an error never repeats a whole long input. */
export function clip(text: string, limit = QUOTE_LIMIT): string {
  if (text.length <= limit) return text;
  // Never cut a surrogate pair in two.
  const end = /[\uD800-\uDBFF]/.test(text[limit - 1]!) ? limit - 1 : limit;
  return `${text.slice(0, end)}… (${text.length} characters)`;
}

/**
 * A value as an error message shows it: strings in JSON quotes, `1009n` for a BigInt, objects as JSON; at most
 * QUOTE_LIMIT characters of it, and never a throw (a cycle, a BigInt inside, or a throwing getter).
 */
export function quote(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return `${JSON.stringify(value.slice(0, QUOTE_LIMIT))}${value.length > QUOTE_LIMIT ? `… (${value.length} characters)` : ''}`;
    case 'bigint':
      return clip(`${value}n`);
    case 'symbol':
      return clip(value.toString());
    case 'function':
      return 'a function';
    case 'object': {
      if (value === null) return 'null';
      try {
        const text = JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v));
        if (typeof text === 'string') return clip(text);
      } catch {
        // A cycle, a getter or toJSON that throws, a revoked Proxy: say what kind of value it is instead.
      }
      return safeIsArray(value) ? 'an array' : 'an object';
    }
    default:
      return String(value);
  }
}

/**
 * What kind of value an error says it got: `null`, `undefined`, `an array`, `an object`, `a function`, `the string "M1"`,
 * or the type and the value (`number 5`, `boolean true`, `bigint 1009n`), quoted with QUOTE_LIMIT as `quote` does.
 * Every "…; got X" of the package's errors is worded by this one function.
 */
export function describeValue(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (typeof value === 'string') return `the string ${quote(value)}`;
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'object') return safeIsArray(value) ? 'an array' : 'an object';
  return `${typeof value} ${quote(value)}`;
}

/** Reports a field that cannot be used: `field` is its path (`families.apple7`, `devices[0]`; '' for the value itself). */
export type InputFailure = (field: string, problem: string) => never;

/** Options of readInput. */
export interface ReadInputOptions {
  /** Only what JSON can hold: a BigInt, a symbol or a function is refused (their `field` named). */
  json?: boolean;
  /** Levels of the caller's own wrapping around the input (buildMatrix's list and `{ where, report }` pair): the
   * depth limit counts from inside them, so a file reads as deep here as its reader (JSON_LIMITS) lets it be. */
  wrappers?: number;
}

function safeIsArray(value: object): boolean {
  try {
    return Array.isArray(value);
  } catch {
    return false;
  }
}

function define(target: Record<string, unknown>, key: string, value: unknown): void {
  // defineProperty, not assignment: a key named "__proto__" stays a key and never becomes the copy's prototype.
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function joinPath(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return path === '' ? clip(key, 64) : `${path}.${clip(key, 64)}`;
}

function problemOf(err: unknown): string {
  let text: string;
  try {
    text = err instanceof Error ? err.message : String(err);
  } catch {
    text = 'an error';
  }
  return clip(text.split('\n')[0] ?? '');
}

/**
 * Reads an untrusted value once into plain data: own enumerable properties of objects and the elements of arrays,
 * each getter called once. A getter or Proxy trap that throws, a cycle, or nesting deeper than INPUT_DEPTH_LIMIT is
 * handed to `fail` with the field's path, as is (with `json`) a value JSON cannot hold. The copy is what the caller
 * validates and keeps, so the input cannot change between the check and the use.
 */
export function readInput(value: unknown, fail: InputFailure, options: ReadInputOptions = {}, path = ''): unknown {
  const rules = { json: options.json === true, depth: INPUT_DEPTH_LIMIT + (options.wrappers ?? 0) };
  return readValue(value, fail, rules, path, []);
}

function readValue(
  value: unknown,
  fail: InputFailure,
  rules: { json: boolean; depth: number },
  path: string,
  ancestors: object[],
): unknown {
  const { json } = rules;
  const kind = typeof value;
  if (kind === 'bigint' || kind === 'symbol' || kind === 'function') {
    if (json) fail(path, `is ${kind === 'bigint' ? 'a BigInt' : `a ${kind}`}, which JSON cannot hold`);
    return value;
  }
  if (kind !== 'object' || value === null) return value;
  const object = value as object;
  if (ancestors.includes(object)) fail(path, 'contains itself (a cycle)');
  if (ancestors.length >= rules.depth) fail(path, `is nested more than ${INPUT_DEPTH_LIMIT} levels deep`);
  const inner = [...ancestors, object];
  let keys: string[];
  let isArray: boolean;
  try {
    isArray = Array.isArray(object);
    keys = isArray ? [] : Object.keys(object);
  } catch (err) {
    return fail(path, `cannot be read (${problemOf(err)})`);
  }
  if (isArray) {
    let length: number;
    try {
      length = (object as unknown[]).length;
    } catch (err) {
      return fail(path, `cannot be read (${problemOf(err)})`);
    }
    if (length > INPUT_ARRAY_LIMIT)
      fail(path, `has ${length} elements, more than the ${INPUT_ARRAY_LIMIT} any input of metal-cap-shim can need`);
    const out: unknown[] = [];
    for (let i = 0; i < length; i++)
      out.push(readValue(readProperty(object, i, fail, path), fail, rules, joinPath(path, i), inner));
    return out;
  }
  const out: Record<string, unknown> = {};
  for (const key of keys)
    define(out, key, readValue(readProperty(object, key, fail, path), fail, rules, joinPath(path, key), inner));
  return out;
}

function readProperty(object: object, key: string | number, fail: InputFailure, path: string): unknown {
  try {
    return (object as Record<string | number, unknown>)[key];
  } catch (err) {
    return fail(joinPath(path, key), `cannot be read (${problemOf(err)})`);
  }
}
