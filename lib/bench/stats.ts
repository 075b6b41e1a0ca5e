/** The statistics `bench` reports: medians, the spread of a ratio over rounds, and the order of each round. */

/** The median of the values (the mean of the middle two for an even count); NaN for none. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The lowest and highest of the values over the rounds (null for none). */
export interface Spread {
  min: number | null;
  max: number | null;
}

export function spreadOf(values: readonly number[]): Spread {
  return values.length === 0 ? { min: null, max: null } : { min: Math.min(...values), max: Math.max(...values) };
}

/**
 * The order of the sides in round `round` (0-based): 0, 1, …, n-1 turned left by `round`, so each side comes first,
 * second, … in turn and drift within a round (a machine heating up) falls on every side alike.
 */
export function rotation(sides: number, round: number): number[] {
  return Array.from({ length: sides }, (_, i) => (i + round) % sides);
}
