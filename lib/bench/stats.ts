/**
 * The statistics `bench` reports, in one place: every mode, the report and the matrix print the numbers made here.
 *
 * A speed-up is estimated from paired rounds: each round runs stock and every profile back to back (in an order that
 * turns, see rotation()), and a profile's ratio to the stock run of the same round cancels what drifts between rounds.
 * The centre is the geometric mean of those ratios, and the interval a paired Student t interval on their logarithms
 * at 95 % confidence. Why t on logs: a ratio of speeds is skewed and its logarithm close to symmetric; the t interval
 * then covers the true speed-up in 95 % of runs whatever the number of rounds (test/bench/stats.test.ts measures this
 * on seeded noise), where the lowest-to-highest range of N ratios covers it with 1 − 2^(1−N) only (75 % at N = 3).
 * One round gives no interval at all, and says so.
 */

/** The confidence of every interval bench states. */
export const CONFIDENCE = 0.95;

/** How the interval is computed, as the output and the docs name it. */
export const INTERVAL_METHOD = 'paired t interval on log ratios' as const;

/** The median of the values (the mean of the middle two for an even count); NaN for none. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * A computed statistic to 12 significant digits: exp(log x) is x only to within a few units of the last place, and a
 * measurement of tokens per second has nowhere near 12 digits, so equal inputs give equal outputs (100, not 100.00000000000004).
 */
function settled(x: number): number {
  return Number(x.toPrecision(12));
}

/** The geometric mean of positive values; NaN for none, or when any is not a positive finite number. */
export function geometricMean(values: readonly number[]): number {
  if (values.length === 0 || values.some((v) => !(v > 0) || !Number.isFinite(v))) return Number.NaN;
  return settled(Math.exp(values.reduce((s, v) => s + Math.log(v), 0) / values.length));
}

/**
 * P(|T| ≤ t) for Student's t with `df` degrees of freedom (a whole number ≥ 1): the finite series of Abramowitz and
 * Stegun 26.7.3 (odd df) and 26.7.4 (even df), exact up to rounding. Written here rather than taken from a statistics
 * package: the one npm package that offers the quantile alone brings 232 others with it.
 */
export function tTwoSidedProbability(t: number, df: number): number {
  const theta = Math.atan(Math.abs(t) / Math.sqrt(df));
  const c2 = Math.cos(theta) ** 2;
  const s = Math.sin(theta);
  if (df % 2 === 1) {
    // (2/π)[θ + sin θ (cos θ + (2/3) cos³θ + … + (2·4…(df−3))/(1·3…(df−2)) cos^(df−2) θ)]
    let term = Math.cos(theta);
    let sum = df > 1 ? term : 0;
    for (let k = 3; k <= df - 2; k += 2) {
      term *= ((k - 1) / k) * c2;
      sum += term;
    }
    return (2 / Math.PI) * (theta + s * sum);
  }
  // sin θ [1 + (1/2) cos²θ + (1·3)/(2·4) cos⁴θ + … + (1·3…(df−3))/(2·4…(df−2)) cos^(df−2) θ]
  let term = 1;
  let sum = 1;
  for (let k = 2; k <= df - 2; k += 2) {
    term *= ((k - 1) / k) * c2;
    sum += term;
  }
  return s * sum;
}

/** The two-sided critical value: the t with P(|T| ≤ t) = `confidence`, for `df` ≥ 1 degrees of freedom. */
export function tCritical(df: number, confidence: number = CONFIDENCE): number {
  if (!Number.isSafeInteger(df) || df < 1) throw new RangeError(`degrees of freedom must be a whole number ≥ 1: ${df}`);
  // P(|T| ≤ t) rises from 0 to 1 with t: bisection, 200 halvings of [0, 1e6] is below double precision.
  let lo = 0;
  let hi = 1e6;
  for (let i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
    const mid = (lo + hi) / 2;
    if (tTwoSidedProbability(mid, df) < confidence) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/**
 * What a speed-up's interval says: `faster` or `slower` when the whole interval is above or below 1,
 * `no-difference-shown` when it holds 1, `no-interval` with fewer than two rounds.
 */
export type SpeedupVerdict = 'faster' | 'slower' | 'no-difference-shown' | 'no-interval';

/** A speed-up over paired rounds: the centre, its 95 % interval, and what the interval says. */
export interface SpeedupEstimate {
  /** The geometric mean of the per-round ratios; null with no round. */
  centre: number | null;
  /** The interval's bounds (null with fewer than two rounds). */
  low: number | null;
  high: number | null;
  /** The paired rounds it is computed from. */
  rounds: number;
  verdict: SpeedupVerdict;
}

/**
 * The speed-up from the per-round ratios (profile t/s over stock t/s of the same round): geometric mean, and the paired
 * t interval on the log ratios at CONFIDENCE. Ratios that are not positive finite numbers are not rounds.
 */
export function pairedSpeedup(ratios: readonly number[]): SpeedupEstimate {
  const logs = ratios.filter((r) => r > 0 && Number.isFinite(r)).map(Math.log);
  const n = logs.length;
  if (n === 0) return { centre: null, low: null, high: null, rounds: 0, verdict: 'no-interval' };
  const mean = logs.reduce((s, v) => s + v, 0) / n;
  const centre = settled(Math.exp(mean));
  if (n === 1) return { centre, low: null, high: null, rounds: 1, verdict: 'no-interval' };
  const variance = logs.reduce((s, v) => s + (v - mean) ** 2, 0) / (n - 1);
  const half = tCritical(n - 1) * Math.sqrt(variance / n);
  const low = settled(Math.exp(mean - half));
  const high = settled(Math.exp(mean + half));
  const verdict = low > 1 ? 'faster' : high < 1 ? 'slower' : 'no-difference-shown';
  return { centre, low, high, rounds: n, verdict };
}

/**
 * The interval's half-width relative to its centre, as `--precision` compares it: the larger of high/centre − 1 and
 * 1 − low/centre (the interval is symmetric in logs, so the upper side is the larger). Infinity without an interval.
 */
export function relativeHalfWidth(e: SpeedupEstimate): number {
  if (e.centre === null || e.low === null || e.high === null) return Number.POSITIVE_INFINITY;
  return Math.max(e.high / e.centre - 1, 1 - e.low / e.centre);
}

/**
 * The order of the sides in round `round` (0-based): 0, 1, …, n-1 turned left by `round`, so each side comes first,
 * second, … in turn and drift within a round (a machine heating up) falls on every side alike.
 */
export function rotation(sides: number, round: number): number[] {
  return Array.from({ length: sides }, (_, i) => (i + round) % sides);
}
