#!/usr/bin/env node
// How often `bench` calls noise a finding with the real tools: llama.cpp's CPU llama-bench (scripts/build/llama-tools.mjs)
// on the suite's tiny model, stock against host-family over the simulated Metal, where no profile changes anything and
// the true speed-up of every row is 1.0. Runs `bench` RUNS times at the default rounds and counts the rows whose 95 %
// interval excludes 1x (the false-call rate; about 5 % is what a 95 % interval promises), and, from the same data, how
// often the old lowest-to-highest range of the per-round ratios excluded 1x. The last line is JSON.
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { llamaTools } from '../scripts/build/llama-tools.mjs';
import { writeTinyModel } from '../scripts/build/tiny-gguf.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const cli = path.join(root, 'dist', 'cli.js');
const RUNS = Number(process.env.BENCH_RUNS ?? 20);
const ROUNDS = process.env.BENCH_ROUNDS; // unset: bench's default

const tools = await llamaTools();
const model = path.join(mkdtempSync(path.join(tmpdir(), 'mcs-interval-')), 'tiny.gguf');
writeTinyModel(model, { seed: 1, vocab: tools.vocab });
const env = { ...process.env, METAL_CAP_SHIM_SIM_SNAPSHOT: 'vz-guest-m1-ultra-tahoe-stock' };

let rows = 0;
let called = 0;
let rangeExcluded = 0;
let rounds = 0;
for (let i = 0; i < RUNS; i++) {
  const args = [cli, 'bench', '--json', ...(ROUNDS ? ['--rounds', ROUNDS] : []), '--', tools.bench];
  const r = spawnSync(process.execPath, [...args, '-m', model, '-p', '64', '-n', '16', '-r', '2'], {
    env,
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`bench failed (exit ${r.status}): ${r.stderr}`);
  const result = JSON.parse(r.stdout);
  rounds = result.rounds;
  for (const row of result.speed)
    for (const p of row.profiles) {
      rows++;
      if (p.speedup.verdict !== 'no-difference-shown') called++;
      if (Math.min(...p.ratios) > 1 || Math.max(...p.ratios) < 1) rangeExcluded++;
    }
  process.stderr.write(`\rinterval: ${i + 1}/${RUNS} runs`);
}
process.stderr.write('\n');
const pct = (n) => `${((100 * n) / rows).toFixed(1)} %`;
console.log(`rows (true speed-up 1.0): ${rows}, ${rounds} rounds each`);
console.log(`95 % interval excludes 1x: ${called} (${pct(called)})`);
console.log(`min–max range excludes 1x: ${rangeExcluded} (${pct(rangeExcluded)})`);
console.log(JSON.stringify({ rows, rounds, intervalFalseCalls: called / rows, rangeFalseCalls: rangeExcluded / rows }));
