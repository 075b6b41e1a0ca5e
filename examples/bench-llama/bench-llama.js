// @ts-check
/**
 * Measures what a profile does for llama.cpp in a macOS guest: runs llama-bench twice on the same model — stock, then
 * with the profile injected by `metal-cap-shim exec` — and prints the result as a Markdown table in the same form as
 * the published measurements (tokens/s, pp512 = prompt processing of 512 tokens, tg128 = generating 128 tokens).
 *
 *   node bench-llama/bench-llama.js --model ~/models/tinyllama-1.1b-chat-v1.0.Q4_K_M.gguf
 *   node bench-llama/bench-llama.js --model M.gguf --profile apple9-hw-tg --llama-bench ~/llama.cpp/build/bin/llama-bench -r 3
 *
 * macOS only. In a VM guest the stock run shows the slow path (SIMD-group kernels off, many ops on the CPU) and the
 * shim run the fast one. On a real Mac, raising profiles are refused (the GPU really is what it reports); there
 * `--profile mask-apple5` does the opposite and reproduces a guest's slow path on bare metal.
 *
 * llama-bench must be a real binary, not a script or anything under /usr/bin: macOS strips DYLD_INSERT_LIBRARIES from
 * SIP-protected programs, and `metal-cap-shim exec` refuses to run those. Its stderr (llama.cpp's log, including the
 * `ggml_metal_device_init` lines that show "simdgroup reduction = true/false") is passed through to this terminal.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

const USAGE = `usage: bench-llama --model PATH [--profile NAME] [--llama-bench PATH] [--repetitions N]

  --model PATH          GGUF model to benchmark (required)
  --profile NAME        metal-cap-shim profile for the shim run (default cua-release, the configuration behind Cua's published numbers)
  --llama-bench PATH    llama-bench binary (default: llama-bench on PATH)
  --repetitions N, -r   llama-bench repetitions per test (default: llama-bench's own, 5)`;

/**
 * One entry of `llama-bench -o json` (an array of these, one per test). Only the fields used here; `avg_ts` is the
 * mean tokens/s over the repetitions.
 * @typedef {{ build_commit?: string; build_number?: number; model_filename?: string; model_type?: string;
 *   n_prompt: number; n_gen: number; n_depth?: number; avg_ts: number; stddev_ts?: number }} LlamaBenchResult
 */

/**
 * What `metal-cap-shim exec --trace FILE` writes when the program exits.
 * @typedef {{ profileApplied?: boolean; patchedClasses?: string[];
 *   trace?: { selector: string; family: number | null; calls: number }[] }} ExecTrace
 */

/** @typedef {import('node:child_process').SpawnSyncReturns<string>} Run */

const PP = 512;
const TG = 128;

/**
 * @param {string} message
 * @param {number} [code]
 * @returns {never}
 */
function fail(message, code = 1) {
  console.error(`bench-llama: ${message}`);
  process.exit(code);
}

function parseOptions() {
  try {
    const { values } = parseArgs({
      options: {
        model: { type: 'string', short: 'm' },
        profile: { type: 'string', default: 'cua-release' },
        'llama-bench': { type: 'string', default: 'llama-bench' },
        repetitions: { type: 'string', short: 'r' },
        help: { type: 'boolean', short: 'h' },
      },
    });
    if (values.help) {
      console.log(USAGE);
      process.exit(0);
    }
    if (!values.model) throw new Error('--model is required');
    /** @type {number | undefined} */
    let repetitions;
    if (values.repetitions !== undefined) {
      repetitions = Number(values.repetitions);
      if (!Number.isInteger(repetitions) || repetitions < 1)
        throw new Error(`--repetitions must be a whole number ≥ 1, got '${values.repetitions}'`);
    }
    return { model: values.model, profile: values.profile, llamaBench: values['llama-bench'], repetitions };
  } catch (err) {
    return fail(`${/** @type {Error} */ (err).message}\n\n${USAGE}`, 2);
  }
}

/** The metal-cap-shim CLI of the installed package (its `bin` entry, dist/cli.js), run with this same Node. */
/** @returns {string} */
function shimCli() {
  const require = createRequire(import.meta.url);
  const pkgFile = require.resolve('metal-cap-shim/package.json');
  /** @type {{ bin?: Record<string, string> }} */
  const pkg = JSON.parse(readFileSync(pkgFile, 'utf8'));
  return path.join(path.dirname(pkgFile), pkg.bin?.['metal-cap-shim'] ?? 'dist/cli.js');
}

/**
 * @param {Run} run
 * @param {string} label
 * @returns {LlamaBenchResult[]}
 */
function parseResults(run, label) {
  /** @type {unknown} */
  let parsed;
  try {
    parsed = JSON.parse(run.stdout);
  } catch {
    return fail(`${label}: llama-bench did not print JSON on stdout (is it a llama.cpp build with -o json?)`);
  }
  if (!Array.isArray(parsed)) return fail(`${label}: expected a JSON array from llama-bench -o json`);
  return /** @type {LlamaBenchResult[]} */ (parsed);
}

/**
 * @param {LlamaBenchResult[]} results
 * @param {number} nPrompt
 * @param {number} nGen
 * @param {string} label
 * @returns {LlamaBenchResult}
 */
function pick(results, nPrompt, nGen, label) {
  // llama-bench reports a pp test as n_gen 0 and a tg test as n_prompt 0; n_depth (newer builds) is the prefilled
  // context, 0 unless -d is given.
  const found = results.find((r) => r.n_prompt === nPrompt && r.n_gen === nGen && (r.n_depth ?? 0) === 0);
  if (!found || typeof found.avg_ts !== 'number') {
    return fail(`${label}: no ${nPrompt ? `pp${nPrompt}` : `tg${nGen}`} result in llama-bench's output`);
  }
  return found;
}

/** @param {Run} run */
function describeExit(run) {
  return run.signal ? `killed by ${run.signal}` : `exit ${String(run.status)}`;
}

function main() {
  const opts = parseOptions();
  if (process.platform !== 'darwin') {
    fail(
      `this benchmark needs macOS with Metal (llama-bench on the GPU); this is ${process.platform}. ` +
        'To see what a profile would change without a Mac: npx metal-cap-shim audit --snapshot vz-guest-m1-ultra-tahoe-stock',
      2,
    );
  }

  const benchArgs = ['-m', opts.model, '-p', String(PP), '-n', String(TG), '-o', 'json'];
  if (opts.repetitions !== undefined) benchArgs.push('-r', String(opts.repetitions));

  // The stock run must really be stock: an injector already in the environment (a Tart image's
  // TartMetalCapabilities.dylib, another shim) would patch it too. Neither run inherits one.
  const env = { ...process.env };
  if (env.DYLD_INSERT_LIBRARIES) {
    console.error(`bench-llama: ignoring DYLD_INSERT_LIBRARIES=${env.DYLD_INSERT_LIBRARIES} for both runs`);
    delete env.DYLD_INSERT_LIBRARIES;
  }
  // stdout carries the JSON; stderr (llama.cpp's log) goes straight to the terminal so a long run shows progress.
  /** @type {import('node:child_process').SpawnSyncOptionsWithStringEncoding} */
  const spawnOpts = { encoding: 'utf8', env, stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 << 20 };

  console.error(`bench-llama: stock run: ${opts.llamaBench} ${benchArgs.join(' ')}`);
  const stockRun = spawnSync(opts.llamaBench, benchArgs, spawnOpts);
  if (stockRun.error) {
    const code = /** @type {NodeJS.ErrnoException} */ (stockRun.error).code;
    fail(
      code === 'ENOENT'
        ? `${opts.llamaBench} not found: build llama.cpp and pass --llama-bench PATH`
        : stockRun.error.message,
    );
  }
  if (stockRun.status !== 0) fail(`stock run failed (${describeExit(stockRun)})`);
  const stock = parseResults(stockRun, 'stock run');

  // `exec` injects the profile into llama-bench with DYLD_INSERT_LIBRARIES; --trace makes the injected library write,
  // at exit, whether the profile went in and what the program asked. It prints nothing into llama-bench's stdout, and
  // tracing costs one counter increment per capability query, which current ggml makes only at init.
  const traceDir = mkdtempSync(path.join(tmpdir(), 'bench-llama-'));
  const traceFile = path.join(traceDir, 'trace.json');
  const execArgs = [
    shimCli(),
    'exec',
    '--profile',
    opts.profile,
    '--trace',
    traceFile,
    '--',
    opts.llamaBench,
    ...benchArgs,
  ];
  console.error(
    `bench-llama: shim run: metal-cap-shim exec --profile ${opts.profile} -- ${opts.llamaBench} ${benchArgs.join(' ')}`,
  );
  const shimRun = spawnSync(process.execPath, execArgs, spawnOpts);
  /** @type {ExecTrace | null} */
  let trace = null;
  try {
    trace = JSON.parse(readFileSync(traceFile, 'utf8'));
  } catch {
    // No trace: the library never loaded into llama-bench (exec has said why on stderr).
  }
  rmSync(traceDir, { recursive: true, force: true });
  // 125 is exec's own failure (126/127: llama-bench could not be run or found), never llama-bench's exit code.
  if (shimRun.status === 125) {
    fail(
      `metal-cap-shim exec failed before llama-bench ran (its error is above); if it refused the profile ${opts.profile} here, on a real Mac try --profile mask-apple5`,
      3,
    );
  }
  if (shimRun.status !== 0) fail(`shim run failed (${describeExit(shimRun)})`);
  if (trace?.profileApplied !== true) {
    fail(
      'the shim run was NOT patched (the injected library did not load or did not apply), so its numbers would be stock ones',
    );
  }
  const shim = parseResults(shimRun, 'shim run');

  const model = path.basename(opts.model).replace(/\.gguf$/i, '');
  /** @type {[string, LlamaBenchResult, LlamaBenchResult][]} */
  const rows = [
    [`pp${PP}`, pick(stock, PP, 0, 'stock run'), pick(shim, PP, 0, 'shim run')],
    [`tg${TG}`, pick(stock, 0, TG, 'stock run'), pick(shim, 0, TG, 'shim run')],
  ];
  const lines = ['| model / test | stock guest | shim guest | ratio |', '|---|---:|---:|---:|'];
  for (const [test, a, b] of rows) {
    lines.push(
      `| ${model} ${test} | ${a.avg_ts.toFixed(2)} | ${b.avg_ts.toFixed(2)} | ${(b.avg_ts / a.avg_ts).toFixed(2)}× |`,
    );
  }
  console.log(lines.join('\n'));

  // Context for whoever reads the table. llama-bench's avg_ts is the mean over the repetitions (the published table
  // gives medians of several runs: repeat this and take the median for a like-for-like comparison).
  const first = stock[0];
  const asked = (trace?.trace ?? []).filter((t) => t.selector === 'supportsFamily:').reduce((n, t) => n + t.calls, 0);
  console.log(
    `\ntokens/s, llama-bench avg_ts (mean of ${opts.repetitions ?? 5} repetitions); llama.cpp ${first?.build_commit ?? '?'}` +
      ` (build ${first?.build_number ?? '?'}); profile ${opts.profile} on ${(trace?.patchedClasses ?? []).join(', ') || 'unknown class'};` +
      ` llama-bench asked supportsFamily: ${asked} times under the shim`,
  );
}

main();
