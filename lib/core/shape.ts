/**
 * Reading plain data (what readInput copied) against a shape, field by field: each reader returns the value with its
 * type, or hands the field's path and what it must be to `fail`. The readers of files other people send (bench
 * results, matrices) use these, so every field a formatter reads is checked once, with one wording.
 */
import { describeValue, isObject, type InputFailure } from './input.js';

/** Bounds of a number: inclusive `min`/`max`, or `above` (exclusive lower bound). */
export interface NumberBounds {
  min?: number;
  max?: number;
  above?: number;
}

/** The readers, bound to one `fail`. */
export interface ShapeReader {
  /** The `fail` the readers were made with, for a rule between fields. */
  fail: InputFailure;
  object(v: unknown, field: string): Record<string, unknown>;
  list<T>(v: unknown, field: string, each: (x: unknown, field: string) => T): T[];
  text(v: unknown, field: string): string;
  textOrNull(v: unknown, field: string): string | null;
  bool(v: unknown, field: string): boolean;
  boolOrNull(v: unknown, field: string): boolean | null;
  /** A whole number ≥ 0. */
  count(v: unknown, field: string): number;
  /** A finite number within `bounds`. */
  number(v: unknown, field: string, bounds?: NumberBounds): number;
  numberOrNull(v: unknown, field: string, bounds?: NumberBounds): number | null;
  oneOf<T extends string>(v: unknown, field: string, values: readonly T[]): T;
}

function boundsText(b: NumberBounds): string {
  const parts = [
    b.above !== undefined ? `above ${b.above}` : null,
    b.min !== undefined ? `at least ${b.min}` : null,
    b.max !== undefined ? `at most ${b.max}` : null,
  ].filter(Boolean);
  return parts.length === 0 ? 'a finite number' : `a finite number ${parts.join(' and ')}`;
}

/** The readers, each naming the field and what it must be when the value is not that. */
export function shapeReader(fail: InputFailure): ShapeReader {
  const must = (ok: boolean, field: string, what: string, got: unknown): void => {
    if (!ok) fail(field, `must be ${what}, got ${describeValue(got)}`);
  };
  const inBounds = (v: unknown, b: NumberBounds): boolean =>
    typeof v === 'number' &&
    Number.isFinite(v) &&
    (b.min === undefined || v >= b.min) &&
    (b.max === undefined || v <= b.max) &&
    (b.above === undefined || v > b.above);
  const r: ShapeReader = {
    fail,
    object(v, field) {
      must(isObject(v), field, 'an object', v);
      return v as Record<string, unknown>;
    },
    list(v, field, each) {
      must(Array.isArray(v), field, 'an array', v);
      return (v as unknown[]).map((x, i) => each(x, `${field}[${i}]`));
    },
    text(v, field) {
      must(typeof v === 'string', field, 'a string', v);
      return v as string;
    },
    textOrNull(v, field) {
      return v === null ? null : r.text(v, field);
    },
    bool(v, field) {
      must(typeof v === 'boolean', field, 'true or false', v);
      return v as boolean;
    },
    boolOrNull(v, field) {
      return v === null ? null : r.bool(v, field);
    },
    count(v, field) {
      must(Number.isSafeInteger(v) && (v as number) >= 0, field, 'a whole number ≥ 0', v);
      return v as number;
    },
    number(v, field, bounds = {}) {
      must(inBounds(v, bounds), field, boundsText(bounds), v);
      return v as number;
    },
    numberOrNull(v, field, bounds = {}) {
      return v === null ? null : r.number(v, field, bounds);
    },
    oneOf(v, field, values) {
      must(
        typeof v === 'string' && (values as readonly string[]).includes(v),
        field,
        `one of ${values.map((x) => `'${x}'`).join(', ')}`,
        v,
      );
      return v as (typeof values)[number];
    },
  };
  return r;
}
