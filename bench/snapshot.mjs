#!/usr/bin/env node
// Snapshot validation must be linear in the snapshot's size: a snapshot and a probe report come from other people, and
// a file of 8 MB once took minutes. This validates synthetic snapshots of N and 2N devices (N = 100 000 by default,
// BENCH_DEVICES), with SNAPSHOT_LIMITS' device bound lifted, in two shapes that were quadratic or worse:
//   simulation   every device carries a `simulation` section (a class-name list was rebuilt per device);
//   chain        each device's class subclasses the previous device's class (a find() per link of every chain).
// It prints each time and the ratio 2N / N (linear: about 2; quadratic: about 4). Target: ≤ 2.5. Medians of
// BENCH_ROUNDS interleaved rounds (default 5), in one process. The last line is JSON.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { loadSnapshot, validateSnapshot } = await import(path.join(root, 'dist', 'index.js'));
const N = Number(process.env.BENCH_DEVICES ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const TARGET = 2.5;

const base = loadSnapshot('vz-guest-m1-ultra-tahoe-stock');
const template = base.devices[0];

/** A snapshot of `n` devices, each its own class; `chain`: each class subclasses the one before it. */
function synthetic(n, shape) {
  const devices = new Array(n);
  for (let i = 0; i < n; i++) {
    const simulation = {
      methodsOnConcreteClass: false,
      ...(shape === 'chain' && i > 0 ? { subclassOf: `Device${i - 1}` } : {}),
    };
    devices[i] = { ...template, className: `Device${i}`, registryId: i, simulation };
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
for (const shape of ['simulation', 'chain']) {
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
