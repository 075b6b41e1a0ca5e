#!/usr/bin/env node
// `npm run try-bench`: `metal-cap-shim bench` tried in a Linux clone over the simulated Metal, in one command
// (docs/bench.md, "Try it here, without a Mac"). It says first what each step costs (time and disk, as measured
// here), then says each step as it starts, with the time since it began:
//
//   1. the simulated Metal and dist/ (`npm run sim`, with its own progress);
//   2. node-llama-cpp with its Linux CPU prebuilt, in a project in the user cache (node-llama-cpp-prebuilt.mjs);
//   3. a tiny deterministic model (tiny-gguf.mjs), in the results folder;
//   4. bench --node-llama-cpp over the simulated VM guest;
//
// and with --tools also llama.cpp's llama-bench and llama-perplexity built for the CPU (llama-tools.mjs, 12 to 21
// minutes cold), bench's speed mode over llama-bench and its fidelity mode over llama-perplexity. Each bench's output
// is shown and kept in build/try-bench/<time>/ (a new folder in the clone), named at the end. The tools run on the
// CPU, so every speed-up is noise and bench says so: what is tried is the orchestration, the statistics, the output.
//
//   node scripts/build/try-bench.mjs [--tools] [--rounds N]
import { spawn } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cleanupOnSignal } from './cleanup-on-signal.mjs';
import { cachedLlamaTools, llamaTools, TOOLS_COST } from './llama-tools.mjs';
import { nodeLlamaCppProject, PREBUILT_COST } from './node-llama-cpp-prebuilt.mjs';
import { formatDuration } from './progress.mjs';
import { repoRoot } from './sim-toolchain.mjs';
import { writeTinyModel } from './tiny-gguf.mjs';

const label = 'try-bench';

/** The simulated VM the benches run in: an M1 Ultra's guest on macOS 26, stock (docs/simulation.md). */
export const SIM_SNAPSHOT = 'vz-guest-m1-ultra-tahoe-stock';

/** bench's rounds unless --rounds says otherwise: fewer than bench's 5, as the speed-ups here are noise anyway. */
const DEFAULT_ROUNDS = 3;

/**
 * What each step costs, measured on the shared 2-core Linux machine on 2026-12-06 (other builds running, load 5 to
 * 10): `cold` the first time, `warm` after, `disk` what it writes. The node-llama-cpp project's and the tools' costs
 * are their scripts' (PREBUILT_COST, TOOLS_COST). The bench steps run the tiny model on one thread.
 */
export const STEP_COSTS = Object.freeze({
  // dist/ 26 s, the native test build 100 s, the example consumer 8 s; a fresh clone adds npm ci (43 s).
  sim: { cold: '2–3 min', warm: '2 s', disk: '12 MB in dist/ and build/' },
  project: {
    cold: `${PREBUILT_COST.seconds} s`,
    warm: 'at once',
    disk: `${PREBUILT_COST.tarballsMB} MB of tarballs and ${PREBUILT_COST.keptMB} MB in the cache`,
  },
  model: { cold: 'under a second', warm: 'under a second', disk: '17 MB' },
  benchNlc: { cold: '30–50 s', warm: '30–50 s', disk: 'its output' },
  tools: {
    cold: `${TOOLS_COST.minutes} min`,
    warm: 'at once',
    disk: `${TOOLS_COST.tempMB} MB temporary, ${TOOLS_COST.keptMB} MB in the cache`,
  },
  benchSpeed: { cold: 'under 10 s', warm: 'under 10 s', disk: 'its output' },
  benchFidelity: { cold: 'under 10 s', warm: 'under 10 s', disk: 'its output' },
});

/** The steps for these options, in order: a name, what it does, and its cost. */
export function plannedSteps({ tools }) {
  const steps = [
    ['sim', 'the simulated Metal and dist/ (npm run sim)'],
    ['project', 'node-llama-cpp with its Linux CPU prebuilt (node-llama-cpp-prebuilt.mjs)'],
    ['model', 'a tiny model (tiny-gguf.mjs)'],
    ['benchNlc', 'bench --node-llama-cpp'],
  ];
  if (tools)
    steps.push(
      ['tools', 'llama-bench and llama-perplexity for the CPU (llama-tools.mjs)'],
      ['benchSpeed', 'bench -- llama-bench'],
      ['benchFidelity', 'bench --fidelity -- llama-perplexity'],
    );
  return steps.map(([name, what]) => ({ name, what, ...STEP_COSTS[name] }));
}

/** The plan as the lines said before anything runs. */
export function planLines(steps) {
  const width = Math.max(...steps.map((s) => s.what.length));
  return steps.map(
    (s, i) => `  ${i + 1}. ${s.what.padEnd(width)}  ${s.cold} the first time, ${s.warm} after; ${s.disk}`,
  );
}

/** The options, or a usage error's message. */
export function parseArgs(args) {
  const options = { tools: false, rounds: DEFAULT_ROUNDS, help: false };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--tools') options.tools = true;
    else if (arg === '--help' || arg === '-h') options.help = true;
    else if (arg === '--rounds') {
      const n = Number(args[++i]);
      if (!Number.isInteger(n) || n < 1 || n > 100) return { error: '--rounds takes a whole number from 1 to 100' };
      options.rounds = n;
    } else return { error: `unknown argument ${arg}: try-bench takes --tools, --rounds N and --help` };
  }
  return { options };
}

const USAGE = `Usage: npm run try-bench [-- [--tools] [--rounds N]]
       node scripts/build/try-bench.mjs [--tools] [--rounds N]

Tries metal-cap-shim bench here, over the simulated Metal: prepares what it needs, each step said as it starts, and
runs bench --node-llama-cpp; with --tools also builds llama.cpp's llama-bench and llama-perplexity for the CPU
(${TOOLS_COST.minutes} minutes the first time) and runs bench's speed and fidelity modes over them. The outputs are
kept in build/try-bench/<time>/. --rounds N: bench's rounds (default ${DEFAULT_ROUNDS}).`;

function say(line) {
  process.stdout.write(`${label}: ${line}\n`);
}

/**
 * Runs `command`; its stdout shown and copied to `file` (when given), its stderr shown; resolves to its exit code.
 * While it runs, SIGINT, SIGTERM and SIGHUP are passed on to it (bench then prints and keeps what it measured) and
 * this process exits as the signal says once it has ended.
 */
function runShown(command, args, { file = null, env = process.env } = {}) {
  const guard = cleanupOnSignal({ log: (line) => say(line) });
  return new Promise((resolve, reject) => {
    const child = guard.child(
      spawn(command, args, { cwd: repoRoot, env, stdio: ['ignore', file === null ? 'inherit' : 'pipe', 'inherit'] }),
    );
    const copy = file === null ? null : createWriteStream(file, { flags: 'wx', mode: 0o644 });
    child.stdout?.on('data', (chunk) => {
      process.stdout.write(chunk);
      copy.write(chunk);
    });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      // Stopped by a signal: the guard's handler exits once the child has; no further step may start meanwhile.
      if (guard.stopping() !== null) return copy?.end();
      const status = signal === null ? code : 128;
      if (copy === null) resolve(status);
      else copy.end(() => resolve(status));
    });
  }).finally(() => guard.release());
}

/** A new folder for this run's outputs: build/try-bench/<time>/, never one that was there. */
function resultsFolder() {
  const parent = path.join(repoRoot, 'build', 'try-bench');
  mkdirSync(parent, { recursive: true, mode: 0o755 });
  const dir = path.join(parent, new Date().toISOString().replace(/[:.]/g, '-'));
  mkdirSync(dir, { mode: 0o755 });
  return dir;
}

async function main(options) {
  const steps = plannedSteps(options);
  const toolsCached = options.tools && cachedLlamaTools() !== null;
  say(
    `${steps.length} steps, each said as it starts (measured on a shared 2-core Linux machine, 2026-12-06${toolsCached ? '; the llama.cpp tools are cached' : ''}):`,
  );
  for (const line of planLines(steps)) process.stdout.write(`${line}\n`);
  const started = Date.now();
  let index = 0;
  const begin = (what) => say(`[${++index}/${steps.length}] ${what} (${formatDuration(Date.now() - started)})`);
  const failed = [];
  begin(steps[0].what);
  if ((await runShown(process.execPath, [path.join(repoRoot, 'scripts', 'build', 'sim.mjs')])) !== 0)
    throw new Error('npm run sim failed (its output above says why)');
  begin(steps[1].what);
  const project = await nodeLlamaCppProject();
  const out = resultsFolder();
  begin(`${steps[2].what}: ${path.join(out, 'tiny.gguf')}`);
  const model = writeTinyModel(path.join(out, 'tiny.gguf'), { seed: 1, vocab: project.vocab }).file;
  const env = { ...process.env, METAL_CAP_SHIM_SIM_SNAPSHOT: SIM_SNAPSHOT };
  const cli = path.join(repoRoot, 'dist', 'cli.js');
  const rounds = ['--rounds', String(options.rounds)];
  const bench = async (step, file, args) => {
    begin(`${step.what} over ${SIM_SNAPSHOT}, ${step.cold} (output also in ${file})`);
    const code = await runShown(process.execPath, [cli, 'bench', ...args], { file: path.join(out, file), env });
    if (code !== 0) failed.push(`${file}: bench exited with ${code}`);
  };
  await bench(steps[3], 'node-llama-cpp.txt', [
    '--node-llama-cpp',
    '--project',
    project.dir,
    '--model',
    model,
    '--prompt-tokens',
    '64',
    '--gen-tokens',
    '16',
    // node-llama-cpp's default of two threads spins against other work on a shared 2-core machine.
    '--threads',
    '1',
    ...rounds,
  ]);
  if (options.tools) {
    begin(steps[4].what);
    const tools = await llamaTools();
    await bench(steps[5], 'speed.txt', [...rounds, '--', tools.bench, '-m', model, '-p', '64', '-n', '16', '-t', '1']);
    const text = path.join(repoRoot, 'test', 'fixtures', 'bench', 'text.txt');
    await bench(steps[6], 'fidelity.txt', ['--fidelity', '--', tools.perplexity, '-m', model, '-f', text, '-c', '64']);
  }
  say(`done in ${formatDuration(Date.now() - started)}; the outputs are in ${out}`);
  for (const f of failed) say(f);
  return failed.length === 0 ? 0 : 1;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const parsed = parseArgs(process.argv.slice(2));
  if (parsed.error !== undefined) {
    process.stderr.write(`${label}: ${parsed.error}\n`);
    process.exit(2);
  }
  if (parsed.options.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  main(parsed.options).then(
    (code) => process.exit(code),
    (err) => {
      process.stderr.write(`${label}: ${err.message}\n`);
      process.exit(1);
    },
  );
}
