#!/usr/bin/env node
// doctor's orchestration cost and profile auto's, under the simulated Metal (Linux test build) or real Metal:
//   doctor          a whole doctor() run (the probe runner started as a child process, stock run, apply, patched run,
//                   restore, judging): wall time, the native probes' own time, the rest (orchestration) as a share of
//                   the whole, and the runner's start-up (from the call to its first probe) as a ratio to the probes'
//                   own time; target: start-up ≤ 10 % of the probes' time;
//   auto (warm)     applyProfile('auto') with every device cached, against applyProfile('apple7') (the profile a
//                   clean paravirtual device proves); target: auto ≤ 2× named.
// One process, one run; medians; named and auto applies alternate. The cache goes to a temporary XDG_CACHE_HOME (macOS: ~/Library/Caches is used).
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const entry = JSON.stringify(path.join(root, 'dist', 'index.js'));
const tablesEntry = JSON.stringify(path.join(root, 'dist', 'tables.js'));
const env = {
  ...process.env,
  METAL_CAP_SHIM_SIM_SNAPSHOT: process.env.METAL_CAP_SHIM_SIM_SNAPSHOT ?? 'vz-guest-m1-ultra-tahoe-stock',
  XDG_CACHE_HOME: mkdtempSync(path.join(tmpdir(), 'mcs-bench-doctor-')),
};
const DOCTOR_RUNS = Number(process.env.BENCH_DOCTOR_RUNS ?? 15);
const APPLY_RUNS = Number(process.env.BENCH_APPLY_RUNS ?? 200);

const code = `
const m = await import(${entry});
const { CAPABILITY_PROBE_IDS } = await import(${tablesEntry});
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;
async function doctorRuns(options) {
  const total = [], native = [], startup = [];
  for (let i = 0; i < ${DOCTOR_RUNS}; i++) {
    const t0 = process.hrtime.bigint();
    let first = null;
    const r = await m.doctor({ cache: false, ...options, onProgress: () => { first ??= ms(t0); } });
    total.push(ms(t0));
    if (!r.supported) throw new Error(r.detail);
    startup.push(first);
    native.push(r.devices.flatMap((d) => d.probes).reduce((s, p) => s + (p.ms ?? 0), 0));
  }
  return { total: median(total), native: median(native), startup: median(startup) };
}
// Named and auto alternate, so drift on a shared machine falls on both alike.
function applyRuns(profiles) {
  const xs = profiles.map(() => []);
  for (let i = 0; i < ${APPLY_RUNS}; i++) {
    profiles.forEach((profile, k) => {
      const t0 = process.hrtime.bigint();
      const r = m.applyProfile(profile);
      xs[k].push(ms(t0));
      if (!r.applied) throw new Error(r.detail);
      m.restore();
    });
  }
  return xs.map(median);
}
const full = await doctorRuns({ mmapSize: 1 << 20 });
const capability = await doctorRuns({ probes: [...CAPABILITY_PROBE_IDS] });
const cold0 = process.hrtime.bigint();
const first = m.applyProfile('auto');
const cold = ms(cold0);
m.restore();
if (first.auto.from !== 'doctor') throw new Error('the cache was not empty');
applyRuns(['apple7', 'auto']);
const [named, warm] = applyRuns(['apple7', 'auto']);
const again = m.applyProfile('auto');
m.restore();
console.log(JSON.stringify({ full, capability, cold, named, warm, warmFrom: again.auto.from, profile: again.profile }));
`;

const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], { env, encoding: 'utf8' });
if (r.status !== 0) {
  process.stderr.write(r.stderr);
  process.exit(1);
}
const x = JSON.parse(r.stdout);
const share = (d) => (d.total - d.native) / d.total;
console.log(
  `doctor(), every probe (1 MiB mmap file)   ${x.full.total.toFixed(2)} ms; probes ${x.full.native.toFixed(2)} ms; orchestration ${(x.full.total - x.full.native).toFixed(2)} ms (${(100 * share(x.full)).toFixed(1)} %)`,
);
console.log(
  `doctor(), capability probes (what auto runs) ${x.capability.total.toFixed(2)} ms; probes ${x.capability.native.toFixed(2)} ms; orchestration ${(x.capability.total - x.capability.native).toFixed(2)} ms (${(100 * share(x.capability)).toFixed(1)} %)`,
);
for (const [what, d] of [
  ['every probe', x.full],
  ['capability probes', x.capability],
]) {
  console.log(
    `doctor() runner start-up, ${what}: ${d.startup.toFixed(2)} ms = ${(100 * (d.startup / d.native)).toFixed(1)} % of the probes' own ${d.native.toFixed(2)} ms (target ≤ 10 %)`,
  );
}
console.log(`applyProfile('auto'), cold (runs the probes) ${x.cold.toFixed(2)} ms`);
console.log(`applyProfile('apple7')                        median ${x.named.toFixed(3)} ms over ${APPLY_RUNS}`);
console.log(
  `applyProfile('auto'), warm cache (${x.warmFrom})      median ${x.warm.toFixed(3)} ms over ${APPLY_RUNS}   ${(x.warm / x.named).toFixed(2)}× named   (target ≤ 2×)`,
);
console.log(`auto resolved to ${x.profile.name ?? JSON.stringify(x.profile)}`);
console.log(
  JSON.stringify({
    doctorMs: Number(x.full.total.toFixed(2)),
    doctorOrchestrationShare: Number(share(x.full).toFixed(3)),
    autoColdMs: Number(x.cold.toFixed(2)),
    namedApplyMs: Number(x.named.toFixed(3)),
    autoWarmApplyMs: Number(x.warm.toFixed(3)),
    autoWarmOverNamed: Number((x.warm / x.named).toFixed(3)),
  }),
);
