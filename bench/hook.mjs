#!/usr/bin/env node
// Hook cost, measured in native loops in one process over the simulated Metal (Linux test build):
//   patched vs stock cost of supportsFamily: and maxThreadgroupMemoryLength, trace on vs stock, applyProfile() latency.
// One run is BENCH_ROUNDS interleaved rounds (default 31): each round measures stock, patched and traced back to back,
// in an order that rotates from round to round, so machine noise and drift hit all three alike. Each round gives its
// own ratios (patched ÷ stock, traced ÷ stock of that round); the run reports their median and their min–max against
// the targets, since one ratio alone passes or fails by noise on a shared machine.
// Last line: {"patchedOverStock":…, "traceOverStock":…, "applyMedianMs":…, "rounds":…, "patchedRange":[min,max],
// "traceRange":[min,max]}. Targets: ≤ 1.25, ≤ 2 (median of the rounds), ≤ 1 ms.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

process.env.METAL_CAP_SHIM_SIM_SNAPSHOT ||= 'vz-guest-m1-ultra-tahoe-stock';
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const fixturePath = path.join(root, 'build', 'test', 'sim_fixture.node');
if (!existsSync(fixturePath) || !existsSync(path.join(root, 'dist', 'index.js'))) {
  console.error('bench:hook needs the Linux test build: npm run build && npm run build:sim');
  process.exit(1);
}
const fixture = createRequire(import.meta.url)(fixturePath);
const { applyProfile, restore } = await import(path.join(root, 'dist', 'index.js'));

const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 2_000_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 31);
const TARGETS = { patched: 1.25, traced: 2 };
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const perCall = (r) => (r.supportsFamilyNs + r.maxThreadgroupMemoryNs) / 2;
const KINDS = ['stock', 'patched', 'traced'];
const setUp = {
  stock: () => restore(),
  patched: () => applyProfile('cua-release'),
  traced: () => applyProfile('cua-release', { trace: true }),
};
/** One entry per round: each kind's raw result (ns per query, per selector). */
const rounds = [];

fixture.benchQueries(ITERATIONS / 10); // warm caches and the lazy device load
for (let round = 0; round < ROUNDS; round++) {
  const results = {};
  for (let k = 0; k < KINDS.length; k++) {
    const kind = KINDS[(round + k) % KINDS.length];
    setUp[kind]();
    results[kind] = fixture.benchQueries(ITERATIONS);
  }
  rounds.push(results);
}
restore();

/** A metric's per-round ratios against stock, their median and range. */
const ratios = (kind, pick) => {
  const each = rounds.map((r) => pick(r[kind]) / pick(r.stock));
  return { median: median(each), min: Math.min(...each), max: Math.max(...each) };
};
const nsMedian = (kind, pick) => median(rounds.map((r) => pick(r[kind])));
const within = (x, target) => (x <= target ? 'within' : 'ABOVE');

const applyMs = [];
for (let i = 0; i < 200; i++) {
  const t0 = process.hrtime.bigint();
  applyProfile('cua-release');
  applyMs.push(Number(process.hrtime.bigint() - t0) / 1e6);
  restore();
}

const s = nsMedian('stock', perCall);
const p = ratios('patched', perCall);
const t = ratios('traced', perCall);
const range = (r) => `rounds ${r.min.toFixed(3)}–${r.max.toFixed(3)}×`;
console.log(
  `queries per run: ${ITERATIONS} × 2 selectors, ${ROUNDS} interleaved rounds (simulated Metal, GCC runtime)`,
);
console.log(`stock    ${s.toFixed(2)} ns/query`);
console.log(
  `patched  ${nsMedian('patched', perCall).toFixed(2)} ns/query   ${p.median.toFixed(3)}× stock   (target ≤ ${TARGETS.patched}×: median ${within(p.median, TARGETS.patched)}; ${range(p)})`,
);
console.log(
  `trace    ${nsMedian('traced', perCall).toFixed(2)} ns/query   ${t.median.toFixed(3)}× stock   (target ≤ ${TARGETS.traced}×: median ${within(t.median, TARGETS.traced)}; ${range(t)})`,
);
for (const [key, label] of [
  ['supportsFamilyNs', 'supportsFamily:(Apple7)'],
  ['maxThreadgroupMemoryNs', 'maxThreadgroupMemoryLength'],
]) {
  const pick = (r) => r[key];
  const [sp, st] = [ratios('patched', pick), ratios('traced', pick)];
  console.log(
    `  ${label.padEnd(27)} stock ${nsMedian('stock', pick).toFixed(2)} ns, patched ${nsMedian('patched', pick).toFixed(2)} ns (${sp.median.toFixed(3)}×, ${range(sp)}), trace ${nsMedian('traced', pick).toFixed(2)} ns (${st.median.toFixed(3)}×, ${range(st)})`,
  );
}
console.log(`applyProfile()  median ${median(applyMs).toFixed(3)} ms over ${applyMs.length} applies   (target ≤ 1 ms)`);
const round3 = (x) => Number(x.toFixed(3));
console.log(
  JSON.stringify({
    patchedOverStock: round3(p.median),
    traceOverStock: round3(t.median),
    applyMedianMs: round3(median(applyMs)),
    rounds: ROUNDS,
    patchedRange: [round3(p.min), round3(p.max)],
    traceRange: [round3(t.min), round3(t.max)],
  }),
);
