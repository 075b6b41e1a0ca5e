/**
 * "Did you mean": the known name closest to a mistyped one. Bounded: an input much longer than every candidate is
 * never compared, so the cost is at most (longest candidate + 3)² per candidate, whatever the input's length.
 */

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

/** The candidate `input` most likely mistypes (case aside), or null when none is a few edits away. */
export function closest(input: string, candidates: readonly string[]): string | null {
  const typed = input.toLowerCase();
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

/** ` (did you mean 'audit'?)`, or '' when nothing is close: to follow the name in an error message. */
export function didYouMean(input: string, candidates: readonly string[], prefix = ''): string {
  const match = closest(input, candidates);
  return match === null ? '' : ` (did you mean ${prefix}'${match}'?)`;
}
