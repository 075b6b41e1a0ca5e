#!/usr/bin/env node
// Hook cost, measured in native loops in one process over the simulated Metal (Linux test build):
//   patched vs stock cost of supportsFamily: and maxThreadgroupMemoryLength, trace on vs stock, applyProfile() latency.
// Rounds interleave stock / patched / traced so machine noise hits all three alike; medians are reported.
// Last line: {"patchedOverStock":…, "traceOverStock":…, "applyMedianMs":…}. Targets: ≤ 1.25, ≤ 2, ≤ 1 ms.
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
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const perCall = (r) => (r.supportsFamilyNs + r.maxThreadgroupMemoryNs) / 2;
const bySelector = { stock: [], patched: [], traced: [] };
const measure = (kind) => {
  const r = fixture.benchQueries(ITERATIONS);
  bySelector[kind].push(r);
  return perCall(r);
};

fixture.benchQueries(ITERATIONS / 10); // warm caches and the lazy device load
const stock = [];
const patched = [];
const traced = [];
for (let round = 0; round < ROUNDS; round++) {
  restore();
  stock.push(measure('stock'));
  applyProfile('cua-release');
  patched.push(measure('patched'));
  applyProfile('cua-release', { trace: true });
  traced.push(measure('traced'));
}
restore();

const applyMs = [];
for (let i = 0; i < 200; i++) {
  const t0 = process.hrtime.bigint();
  applyProfile('cua-release');
  applyMs.push(Number(process.hrtime.bigint() - t0) / 1e6);
  restore();
}

const s = median(stock);
const p = median(patched);
const t = median(traced);
console.log(`queries per run: ${ITERATIONS} × 2 selectors, ${ROUNDS} interleaved rounds (simulated Metal, GCC runtime)`);
console.log(`stock    ${s.toFixed(2)} ns/query`);
console.log(`patched  ${p.toFixed(2)} ns/query   ${(p / s).toFixed(3)}× stock   (target ≤ 1.25×)`);
console.log(`trace    ${t.toFixed(2)} ns/query   ${(t / s).toFixed(3)}× stock   (target ≤ 2×)`);
const sel = (kind, key) => median(bySelector[kind].map((r) => r[key]));
for (const [key, label] of [['supportsFamilyNs', 'supportsFamily:(Apple7)'], ['maxThreadgroupMemoryNs', 'maxThreadgroupMemoryLength']]) {
  const st = sel('stock', key);
  console.log(
    `  ${label.padEnd(27)} stock ${st.toFixed(2)} ns, patched ${sel('patched', key).toFixed(2)} ns (${(sel('patched', key) / st).toFixed(3)}×), trace ${sel('traced', key).toFixed(2)} ns (${(sel('traced', key) / st).toFixed(3)}×)`,
  );
}
console.log(`applyProfile()  median ${median(applyMs).toFixed(3)} ms over ${applyMs.length} applies   (target ≤ 1 ms)`);
console.log(
  JSON.stringify({
    patchedOverStock: Number((p / s).toFixed(3)),
    traceOverStock: Number((t / s).toFixed(3)),
    applyMedianMs: Number(median(applyMs).toFixed(3)),
  }),
);
