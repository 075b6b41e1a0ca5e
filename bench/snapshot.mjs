#!/usr/bin/env node
// Snapshot validation must be linear in the snapshot's size: a snapshot and a probe report come from other people, and
// a file of 8 MB once took minutes. This validates synthetic snapshots of N and 2N devices (N = 100 000 by default,
// BENCH_DEVICES), with SNAPSHOT_LIMITS' device bound lifted, in two shapes:
//   devices      every device its own class, as recorded;
//   doctor       every device also carries a recorded doctor result with a wrong-result NoCopy fault.
// It prints each time and the ratio 2N / N (linear: about 2; quadratic: about 4). Target: ≤ 2.5. Medians of
// BENCH_ROUNDS interleaved rounds (default 5), in one process. The last line is JSON.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// validateSnapshot is internal (not in the package's exports): bundle lib/device/snapshots.ts into a private folder
// with esbuild (tsup's own bundler) and import that.
const out = path.join(mkdtempSync(path.join(tmpdir(), 'mcs-bench-')), 'snapshots.mjs');
await build({
  entryPoints: [path.join(root, 'lib', 'device', 'snapshots.ts')],
  bundle: true,
  format: 'esm',
  platform: 'node',
  outfile: out,
  logLevel: 'error',
});
const { loadSnapshot, validateSnapshot } = await import(out);
rmSync(path.dirname(out), { recursive: true, force: true });
const N = Number(process.env.BENCH_DEVICES ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const TARGET = 2.5;

const base = loadSnapshot(path.join(root, 'snapshots', 'vz-guest-m1-ultra-tahoe-stock.json'));
const template = base.devices[0];

const notRecorded = { status: 'not-recorded' };
const doctor = {
  provenance: 'assumed',
  probes: {
    'simdgroup-reduction': notRecorded,
    'simdgroup-matrix': { status: 'pass', maxAbsError: 0 },
    bfloat: notRecorded,
    'threadgroup-memory': { status: 'pass', provenThreadgroupMemory: 32768, failedThreadgroupMemory: 49152 },
    'nocopy-mmap': { status: 'wrong-result', detail: 'stale pages', fault: 'stale' },
    'residency-set': notRecorded,
    heap: notRecorded,
  },
};

/** A snapshot of `n` devices, each its own class; `doctor`: each with a recorded doctor result. */
function synthetic(n, shape) {
  const devices = new Array(n);
  for (let i = 0; i < n; i++) {
    devices[i] = {
      ...template,
      className: `Device${i}`,
      registryId: i,
      ...(shape === 'doctor' ? { doctor } : {}),
    };
  }
  return { ...base, devices, defaultDevice: 0 };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
function timeOf(snapshot) {
  const t0 = process.hrtime.bigint();
  validateSnapshot(snapshot, 'bench', { maxDevices: Infinity });
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

const results = {};
for (const shape of ['devices', 'doctor']) {
  const one = synthetic(N, shape);
  const two = synthetic(2 * N, shape);
  timeOf(one); // warm-up: the first run pays for compilation
  const t1 = [],
    t2 = [];
  for (let r = 0; r < ROUNDS; r++) {
    // Alternate which size goes first, so drift on a shared machine falls on both.
    if (r % 2 === 0) {
      t1.push(timeOf(one));
      t2.push(timeOf(two));
    } else {
      t2.push(timeOf(two));
      t1.push(timeOf(one));
    }
  }
  const [m1, m2] = [median(t1), median(t2)];
  const ratio = m2 / m1;
  results[shape] = { ms1: Number(m1.toFixed(1)), ms2: Number(m2.toFixed(1)), ratio: Number(ratio.toFixed(3)) };
  console.log(
    `${shape.padEnd(10)}  ${N} devices ${m1.toFixed(1)} ms, ${2 * N} devices ${m2.toFixed(1)} ms: ${ratio.toFixed(2)}× (target ≤ ${TARGET}×: ${ratio <= TARGET ? 'within' : 'NOT MET'})`,
  );
}
console.log(JSON.stringify({ devices: N, rounds: ROUNDS, ...results }));
