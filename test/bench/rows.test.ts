// bench's speed rows (lib/bench/rows.ts): records matched across runs by their llama-bench key, never by the test's
// name; one row per combination of a sweep, labelled by what tells it apart; each profile paired round by round.
import { describe, expect, it } from 'vitest';
import { benchRecords, type BenchRecord } from '../../lib/bench/llama-bench.js';
import { keyText, speedRows, type RunRecords } from '../../lib/bench/rows.js';
import { geometricMean, pairedSpeedup } from '../../lib/bench/stats.js';

/** llama-bench's records as it prints them: `over` per record, the t/s last. */
function records(...list: Record<string, unknown>[]): BenchRecord[] {
  return benchRecords(list.map((r) => ({ n_prompt: 512, n_gen: 0, backends: 'Metal', ...r })));
}
const run = (round: number, side: string, recs: BenchRecord[]): RunRecords => ({ round, side, records: recs });

describe('keys', () => {
  it('keyText: the same text for the same key in any order, another for any value that differs', () => {
    expect(keyText({ n_threads: 4, flash_attn: 1 })).toBe(keyText({ flash_attn: 1, n_threads: 4 }));
    expect(keyText({ n_threads: 4 })).not.toBe(keyText({ n_threads: 8 }));
    expect(keyText({ flash_attn: 1 })).not.toBe(keyText({ flash_attn: true }));
    // Absent and null are one: a release that prints no such property says nothing of it.
    expect(keyText({})).toBe(keyText({ n_depth: null }));
  });
});

describe('rows', () => {
  it('a sweep: one row per combination, in the order first printed, labelled by the properties that vary', () => {
    const sweep = (k: number) =>
      records(
        { model_filename: '/m/a.gguf', flash_attn: 0, avg_ts: 100 * k },
        { model_filename: '/m/a.gguf', flash_attn: 1, avg_ts: 150 * k },
        { model_filename: '/m/b.gguf', flash_attn: 0, avg_ts: 300 * k },
      );
    const rows = speedRows(['stock', 'P'], [run(1, 'stock', sweep(1)), run(1, 'P', sweep(2))]);
    expect(rows.map((r) => [r.label, r.stock.samples, r.profiles[0]!.samples])).toEqual([
      ['pp512 model=a.gguf fa=0', [100], [200]],
      ['pp512 model=a.gguf fa=1', [150], [300]],
      ['pp512 model=b.gguf fa=0', [300], [600]],
    ]);
    // Nothing varies: the test's name alone.
    expect(speedRows(['stock'], [run(1, 'stock', records({ avg_ts: 1 }))])[0]!.label).toBe('pp512');
  });

  it('a label shows a number as printed, an absent property as none, and never what the test name already says', () => {
    const threads = speedRows(
      ['stock'],
      [run(1, 'stock', records({ n_threads: 4, avg_ts: 1 }, { n_threads: 8, avg_ts: 2 }, { avg_ts: 3 }))],
    );
    expect(threads.map((r) => r.label)).toEqual(['pp512 t=4', 'pp512 t=8', 'pp512 t=none']);
    // n_prompt varies, but pp512 and pp128 already tell the rows apart.
    const prompts = speedRows(['stock'], [run(1, 'stock', records({ avg_ts: 1 }, { n_prompt: 128, avg_ts: 2 }))]);
    expect(prompts.map((r) => r.label)).toEqual(['pp512', 'pp128']);
  });

  it('samples are in round order whatever order the runs are given in', () => {
    const rows = speedRows(
      ['stock', 'P'],
      [
        run(2, 'stock', records({ avg_ts: 20 })),
        run(2, 'P', records({ avg_ts: 60 })),
        run(1, 'stock', records({ avg_ts: 10 })),
        run(1, 'P', records({ avg_ts: 20 })),
      ],
    );
    expect([rows[0]!.stock.samples, rows[0]!.stock.rounds, rows[0]!.profiles[0]!.ratios]).toEqual([
      [10, 20],
      [1, 2],
      [2, 3],
    ]);
  });

  it('rows are matched by key, whatever order a run prints them in', () => {
    const a = { model_filename: 'a.gguf', avg_ts: 100 };
    const b = { model_filename: 'b.gguf', avg_ts: 300 };
    const rows = speedRows(
      ['stock', 'P'],
      [run(1, 'stock', records(a, b)), run(1, 'P', records({ ...b, avg_ts: 330 }, { ...a, avg_ts: 110 }))],
    );
    expect(rows.map((r) => [r.label, r.profiles[0]!.ratios])).toEqual([
      ['pp512 model=a.gguf', [1.1]],
      ['pp512 model=b.gguf', [1.1]],
    ]);
  });

  it('the same key printed twice by one run is two rows, matched by their order within each run', () => {
    const rows = speedRows(
      ['stock', 'P'],
      [run(1, 'stock', records({ avg_ts: 10 }, { avg_ts: 20 })), run(1, 'P', records({ avg_ts: 30 }, { avg_ts: 40 }))],
    );
    expect(rows.map((r) => r.profiles[0]!.ratios)).toEqual([[3], [2]]);
    // Three times is three rows.
    const three = speedRows(
      ['stock', 'P'],
      [
        run(1, 'stock', records({ avg_ts: 10 }, { avg_ts: 20 }, { avg_ts: 40 })),
        run(1, 'P', records({ avg_ts: 30 }, { avg_ts: 40 }, { avg_ts: 40 })),
      ],
    );
    expect(three.map((r) => r.profiles[0]!.ratios)).toEqual([[3], [2], [1]]);
  });

  it('each round paired with stock’s run of the same round; a round stock lacks, or stock at 0 t/s, is no pair', () => {
    const rows = speedRows(
      ['stock', 'P'],
      [
        run(1, 'stock', records({ avg_ts: 100, stddev_ts: 3 })),
        run(1, 'P', records({ avg_ts: 200, stddev_ts: 4 })),
        run(2, 'P', records({ avg_ts: 250 })),
        run(2, 'stock', records({ avg_ts: 125, stddev_ts: 4 })),
        run(3, 'P', records({ avg_ts: 180 })),
        run(4, 'stock', records({ avg_ts: 0 })),
        run(4, 'P', records({ avg_ts: 1 })),
      ],
    );
    const [row] = rows;
    expect(row!.stock).toEqual({ ts: null, samples: [100, 125, 0], rounds: [1, 2, 4], stddevTs: Math.sqrt(12.5) });
    expect(row!.profiles).toEqual([
      {
        name: 'P',
        // Over its own rounds (tested in stats.test.ts); stock's has a 0 t/s round, so it has none.
        ts: geometricMean([200, 250, 180, 1]),
        samples: [200, 250, 180, 1],
        rounds: [1, 2, 3, 4],
        stddevTs: 4,
        ratios: [2, 2],
        speedup: pairedSpeedup([2, 2]),
      },
    ]);
  });

  it('a profile with no run of a row has no samples and no speed-up; a row stock never ran still has its profiles', () => {
    const rows = speedRows(['stock', 'P', 'Q'], [run(1, 'P', records({ avg_ts: 5 }))]);
    expect(rows[0]!.stock).toEqual({ ts: null, samples: [], rounds: [], stddevTs: null });
    expect(rows[0]!.profiles.map((p) => [p.name, p.samples, p.speedup.verdict, p.speedup.centre])).toEqual([
      ['P', [5], 'no-interval', null],
      ['Q', [], 'no-interval', null],
    ]);
  });

  it('what the row carries from its first record: key, test, model, type, build and backend', () => {
    const [row] = speedRows(
      ['stock'],
      [
        run(
          1,
          'stock',
          benchRecords([
            {
              n_prompt: 0,
              n_gen: 128,
              n_depth: 4096,
              model_filename: '/x/m.gguf',
              model_type: 'llama 1B',
              build_commit: 'abc',
              build_number: 9,
              backends: 'Metal,BLAS',
              avg_ts: 7,
            },
          ]),
        ),
      ],
    );
    expect({ ...row, stock: undefined, profiles: undefined }).toEqual({
      key: { model_filename: 'm.gguf', model_type: 'llama 1B', n_prompt: 0, n_gen: 128, n_depth: 4096 },
      label: 'tg128 @ d4096',
      test: 'tg128 @ d4096',
      model: 'm.gguf',
      modelType: 'llama 1B',
      build: 'b9 (abc)',
      backend: 'Metal,BLAS',
      stock: undefined,
      profiles: undefined,
    });
  });
});
