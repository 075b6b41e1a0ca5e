/**
 * "Did you mean": the known name closest to a mistyped one. Bounded: an input much longer than every candidate is
 * never compared, so the cost is at most (longest candidate + 3)² per candidate, whatever the input's length.
 */
import { clip } from './input.js';

/** The most edits a typo may take: one for a short name, up to three for a long one. */
function allowedEdits(candidate: string): number {
  return Math.min(3, Math.max(1, Math.floor(candidate.length / 4)));
}

/**
 * Edits (insert, delete, substitute, swap two neighbours) from `a` to `b`, or `limit + 1` once it exceeds `limit`.
 * Optimal string alignment distance, one row at a time.
 */
export function editDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, before[j - 2]! + 1);
      row.push(d);
      best = Math.min(best, d);
    }
    if (best > limit) return limit + 1;
    before = previous;
    previous = row;
  }
  return Math.min(previous[b.length]!, limit + 1);
}

/**
 * The candidate `input` most likely mistypes (case aside), or null when none is a few edits away. A name cut short
 * (`llama` for `llama.cpp`) is the one candidate it begins, when it is three characters or more and begins only one.
 */
export function closest(input: string, candidates: readonly string[]): string | null {
  const typed = input.toLowerCase();
  return nearest(typed, candidates) ?? onlyExtension(typed, candidates);
}

/** The candidate fewest edits from `typed`, within each candidate's allowance. */
function nearest(typed: string, candidates: readonly string[]): string | null {
  let found: string | null = null;
  let fewest = Infinity;
  for (const candidate of candidates) {
    const limit = allowedEdits(candidate);
    if (typed.length > candidate.length + limit) continue;
    const d = editDistance(typed, candidate.toLowerCase(), limit);
    if (d <= limit && d < fewest) {
      found = candidate;
      fewest = d;
    }
  }
  return found;
}

/** The one candidate that begins with `typed` (three characters or more), or null when none or several do. */
function onlyExtension(typed: string, candidates: readonly string[]): string | null {
  if (typed.length < 3) return null;
  const extending = candidates.filter((c) => c.length > typed.length && c.toLowerCase().startsWith(typed));
  return extending.length === 1 ? extending[0]! : null;
}

/** ` (did you mean 'audit'?)`, or '' when nothing is close: to follow the name in an error message. */
export function didYouMean(input: string, candidates: readonly string[], prefix = ''): string {
  const match = closest(input, candidates);
  return match === null ? '' : ` (did you mean ${prefix}'${match}'?)`;
}

/** `a, b or c`: the values an option takes, as a sentence lists them. */
export function orList(values: readonly string[]): string {
  return values.length < 2 ? values.join('') : `${values.slice(0, -1).join(', ')} or ${values.at(-1)}`;
}

/**
 * The one message for a value an option does not take: `--engine takes llama.cpp, mlx or all, got 'llama' (did you
 * mean 'llama.cpp'?)`. `more` follows the list for values beyond it (`or a llama.cpp release like b4753`). Every
 * enumerated option of the CLI says it this way.
 */
export function choiceMessage(option: string, value: string, choices: readonly string[], more = ''): string {
  return `${option} takes ${orList(choices)}${more}, got '${clip(value, 40)}'${didYouMean(value, choices)}`;
}
