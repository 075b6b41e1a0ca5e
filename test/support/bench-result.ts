// A complete bench result as `bench --json` writes it, for tests that need one without running bench: two paired
// rounds of one profile on pp512, measured on the stock Tahoe guest's host (the bundled snapshot's), so a report made
// from that snapshot accepts it. Callers change what their test is about.
import { BENCH_SCHEMA, type BenchResult } from '../../lib/bench/run.js';
import { pairedSpeedup } from '../../lib/bench/stats.js';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { root } from './helpers.js';

/** The host of snapshots/vz-guest-m1-ultra-tahoe-stock.json: a result measured there attaches to its reports. */
export const GUEST_HOST = JSON.parse(
  readFileSync(path.join(root, 'snapshots', 'vz-guest-m1-ultra-tahoe-stock.json'), 'utf8'),
).host as BenchResult['host'];

const side = (ts: number) => ({ ts, samples: [ts, ts], rounds: [1, 2], stddevTs: 1 });

/** A speed result (mode `speed`; `over` replaces top-level fields). */
export function benchResult(over: Record<string, unknown> = {}): Record<string, any> {
  return {
    schema: BENCH_SCHEMA,
    packageVersion: '0.1.0',
    generatedAt: '2026-12-06T00:00:00.000Z',
    mode: 'speed',
    command: ['llama-bench', '-o', 'json'],
    rounds: 2,
    host: structuredClone(GUEST_HOST),
    provenance: 'measured',
    interval: { method: 'paired t interval on log ratios', confidence: 0.95 },
    stock: [],
    profiles: [{ name: 'host-family', profile: {}, warnings: [{ code: 'x', message: 'a warning' }], expected: [] }],
    runs: [
      {
        round: 1,
        side: 'stock',
        exitCode: 0,
        signal: null,
        injectorLoaded: false,
        patchedClasses: [],
        injectorErrors: [],
        seconds: 1,
      },
      {
        round: 1,
        side: 'host-family',
        exitCode: 0,
        signal: null,
        injectorLoaded: true,
        patchedClasses: ['AppleParavirtDevice'],
        injectorErrors: [],
        seconds: 1,
      },
    ],
    records: [],
    speed: [
      {
        key: { n_prompt: 512, n_gen: 0 },
        label: 'pp512',
        test: 'pp512',
        model: 'tiny.gguf',
        modelType: null,
        build: 'b9333',
        backend: 'Metal,BLAS',
        stock: side(100),
        profiles: [{ name: 'host-family', ...side(150), ratios: [1.5, 1.5], speedup: pairedSpeedup([1.5, 1.5]) }],
      },
    ],
    fidelity: null,
    stop: { reason: 'rounds', detail: '2 rounds, as asked', signal: null },
    partial: false,
    failure: null,
    validity: { valid: true, reason: null, affected: true, backends: ['Metal,BLAS'] },
    ...over,
  };
}
