/**
 * bench's speed rows: the tests of every run matched by what identifies them (llama-bench's key properties, as
 * llama.cpp's compare-llama-bench.py matches them), never by the test's name alone, so a sweep (`-fa 0,1`, two `-m`,
 * two `-t`) gives one row per combination. Each row holds every side's per-round tokens/s and each profile's paired
 * speed-up (lib/bench/stats.ts). Linear in the records: one pass to key them, one to build the rows.
 */
import { KEY_PROPERTIES, shortName, type BenchRecord } from './llama-bench.js';
import { geometricMean, pairedSpeedup, type SpeedupEstimate } from './stats.js';

/** The records one run printed. */
export interface RunRecords {
  round: number;
  side: string;
  records: BenchRecord[];
}

/** One side of a row over the rounds. */
export interface SideSpeed {
  /**
   * Tokens per second: the geometric mean of the rounds' values. With every round paired, a profile's `ts` over
   * stock's is exactly its speed-up's centre; the two columns never disagree.
   */
  ts: number | null;
  /** Each round's tokens per second (llama-bench's avg_ts), in round order. */
  samples: number[];
  /** The round of each sample. */
  rounds: number[];
  /** The tool's own ± (llama-bench's stddev_ts over its repetitions), root mean square over the rounds; null when it printed none. */
  stddevTs: number | null;
}

/** One profile's side of a row, with its speed-up over stock. */
export interface ProfileSpeed extends SideSpeed {
  name: string;
  /** Each paired round's ratio to stock's run of the same round, in round order. */
  ratios: number[];
  speedup: SpeedupEstimate;
}

/** One test compared: stock, and each profile with its speed-up. */
export interface SpeedRow {
  /** What identifies the test: every key property its records have, as llama-bench printed them (the model without folders). */
  key: Record<string, unknown>;
  /** The test and the properties that tell it from the other rows: `pp512 fa=1 model=tiny-b.gguf`. */
  label: string;
  /** llama-bench's name for the test: `pp512`, `tg128`, `pp512+tg128 @ d4096`. */
  test: string;
  model: string | null;
  modelType: string | null;
  build: string | null;
  backend: string | null;
  stock: SideSpeed;
  profiles: ProfileSpeed[];
}

/** The key as one string: the key properties in KEY_PROPERTIES order, so two equal keys give the same text. */
export function keyText(key: Record<string, unknown>): string {
  return JSON.stringify(KEY_PROPERTIES.map((p) => (Object.hasOwn(key, p) ? key[p] : null)));
}

/** The properties a row's name already says. */
const IN_TEST_NAME = new Set(['n_prompt', 'n_gen', 'n_depth']);

/** A property's value as a label shows it. */
function valueText(v: unknown): string {
  return typeof v === 'string' ? v : (JSON.stringify(v) ?? 'none');
}

/** The key properties whose values are not the same in every row: what a label must show to tell rows apart. */
function varyingProperties(keys: readonly Record<string, unknown>[]): string[] {
  return KEY_PROPERTIES.filter((p) => {
    if (IN_TEST_NAME.has(p)) return false;
    const first = keys[0] === undefined ? undefined : keyText({ [p]: keys[0][p] });
    return keys.some((k) => keyText({ [p]: k[p] }) !== first);
  });
}

function sideSpeed(records: ReadonlyMap<number, BenchRecord>): SideSpeed {
  const entries = [...records].sort(([a], [b]) => a - b);
  const samples = entries.map(([, r]) => r.avgTs);
  const deviations = entries.map(([, r]) => r.stddevTs).filter((s): s is number => s !== null);
  const ts = geometricMean(samples);
  return {
    ts: Number.isNaN(ts) ? null : ts,
    samples,
    rounds: entries.map(([round]) => round),
    stddevTs: deviations.length === 0 ? null : Math.sqrt(deviations.reduce((s, d) => s + d * d, 0) / deviations.length),
  };
}

/**
 * The rows of `runs`, in the order their tests first appear; `sides` names stock first, then each profile. A key
 * printed twice by one run (`-p 512,512`) is two rows, matched by their order within each run.
 */
export function speedRows(sides: readonly string[], runs: readonly RunRecords[]): SpeedRow[] {
  const rows = new Map<string, { first: BenchRecord; bySide: Map<string, Map<number, BenchRecord>> }>();
  for (const run of runs) {
    const seen = new Map<string, number>();
    for (const record of run.records) {
      const key = keyText(record.key);
      const occurrence = seen.get(key) ?? 0;
      seen.set(key, occurrence + 1);
      const id = `${key}#${occurrence}`;
      let row = rows.get(id);
      if (row === undefined) {
        row = { first: record, bySide: new Map() };
        rows.set(id, row);
      }
      let side = row.bySide.get(run.side);
      if (side === undefined) {
        side = new Map();
        row.bySide.set(run.side, side);
      }
      side.set(run.round, record);
    }
  }
  const all = [...rows.values()];
  const shown = varyingProperties(all.map((r) => r.first.key));
  const [stockName, ...profileNames] = sides;
  return all.map(({ first, bySide }) => {
    const stockRecords = bySide.get(stockName!) ?? new Map<number, BenchRecord>();
    return {
      key: first.key,
      label: [first.test, ...shown.map((p) => `${shortName(p)}=${valueText(first.key[p])}`)].join(' '),
      test: first.test,
      model: first.model,
      modelType: first.modelType,
      build: first.build,
      backend: first.backend,
      stock: sideSpeed(stockRecords),
      profiles: profileNames.map((name) => {
        const mine = bySide.get(name) ?? new Map<number, BenchRecord>();
        const side = sideSpeed(mine);
        const ratios = side.rounds.flatMap((round, i) => {
          const base = stockRecords.get(round)?.avgTs ?? 0;
          return base > 0 ? [side.samples[i]! / base] : [];
        });
        return { name, ...side, ratios, speedup: pairedSpeedup(ratios) };
      }),
    };
  });
}
