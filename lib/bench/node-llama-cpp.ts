/**
 * `bench --node-llama-cpp`: the measurement for apps that embed node-llama-cpp. node-llama-cpp is the user's (an
 * optional peer dependency this package never installs), found from the folder bench runs in, as the user's own app
 * would find it. Each run is a child process (dist/bench-node-llama-cpp.js, node-llama-cpp-child.ts) for one side: stock,
 * or with the profile applied before getLlama(), as `metal-cap-shim/register` applies it in an app. It measures
 * prompt processing and generation in tokens per second, and generates GREEDY_TOKENS tokens greedily after a fixed
 * prompt; each profile's tokens are compared with stock's (the first divergence, with each side's margin there).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { BenchError } from '../core/errors.js';
import { childHostError, hostProcess, nodeChildStart, startNodeChild } from '../core/node-child.js';
import { packageRoot } from '../device/native.js';
import type { Profile } from '../patch/profiles.js';

/** The prompt of the greedy comparison, and how many tokens it generates. */
export const GREEDY_PROMPT = 'Once upon a time, in a small village by the sea, there lived';
export const GREEDY_TOKENS = 32;

/** What a child is asked to do (JSON on its standard input). */
export interface ChildJob {
  /** The folder node-llama-cpp is resolved from: the user's project. */
  cwd: string;
  model: string;
  /** The profile as applied (bound to this host), or null for stock. */
  profile: Profile | null;
  force: boolean;
  promptTokens: number;
  genTokens: number;
  /** node-llama-cpp's threads; null for its own default. */
  threads: number | null;
  /** The text whose tokens the prompt-processing test evaluates (repeated when it has too few). */
  text: string;
}

/** One greedy step: the token chosen, its probability, and the runner-up's. */
export interface GreedyStep {
  token: number;
  text: string;
  probability: number;
  runnerUp: { token: number; text: string; probability: number } | null;
}

/** What a child measured (the last line of its standard output). */
export interface ChildResult {
  nodeLlamaCpp: string;
  /** The llama.cpp release node-llama-cpp loaded (`llama.llamaCppRelease.release`). */
  llamaCpp: string | null;
  /** node-llama-cpp's `llama.gpu`: `metal`, `cuda`, `vulkan`, or false on the CPU. */
  gpu: string | false;
  /** The profile was applied before getLlama() (always false for stock). */
  applied: boolean;
  /** Why it was not applied, when a profile was given. */
  notApplied: string | null;
  pp: { tokens: number; seconds: number };
  tg: { tokens: number; seconds: number };
  greedy: GreedyStep[];
}

/** The first token where a profile's greedy generation left stock's, with each side's choice there. */
export interface Divergence {
  index: number;
  stock: GreedyStep;
  patched: GreedyStep;
}

/** One profile's greedy generation compared with stock's. */
export interface GreedyRow {
  name: string;
  tokens: number;
  /** Null when every token is the same. */
  divergence: Divergence | null;
}

/** The greedy comparison of a result: the prompt, stock's tokens, and each profile against them. */
export interface GreedyComparison {
  prompt: string;
  stock: GreedyStep[];
  profiles: GreedyRow[];
}

/** node-llama-cpp 3.x's oldest minor version bench drives (package.json's peer range says the same: >=3.6.0). */
const OLDEST_MINOR = 6;

/**
 * node-llama-cpp's entry as the user's project in `cwd` resolves it; throws BenchError ERR_BENCH_NO_NODE_LLAMA_CPP
 * saying what to do when it is not there or older than 3.6.0. This package never installs it (an optional peer
 * dependency).
 */
export function resolveNodeLlamaCpp(cwd: string): { entry: string; version: string } {
  let entry: string;
  try {
    entry = createRequire(path.join(cwd, 'package.json')).resolve('node-llama-cpp');
  } catch {
    throw new BenchError(
      'ERR_BENCH_NO_NODE_LLAMA_CPP',
      `node-llama-cpp is not installed in ${cwd} (bench --node-llama-cpp uses your project's own): run bench from your project's folder, or install it there with \`npm install node-llama-cpp\``,
    );
  }
  // Its package.json is not in its exports: read from the folder that holds the entry.
  let dir = path.dirname(entry);
  while (path.basename(dir) !== 'node-llama-cpp' && path.dirname(dir) !== dir) dir = path.dirname(dir);
  let version = 'unknown';
  try {
    version =
      (JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version?: string }).version ?? version;
  } catch {
    // A layout without its package.json: the version stays unknown.
  }
  const [major = 0, minor = 0] = version.split('.').map((n) => Number.parseInt(n, 10));
  if (version !== 'unknown' && (major < 3 || (major === 3 && minor < OLDEST_MINOR)))
    throw new BenchError(
      'ERR_BENCH_NO_NODE_LLAMA_CPP',
      `node-llama-cpp ${version} in ${cwd} is older than 3.${OLDEST_MINOR}.0, the first bench --node-llama-cpp can drive (evaluateWithMetadata): update it there with \`npm install node-llama-cpp@latest\``,
    );
  return { entry, version };
}

/** The first index where the two generations differ, or null (over the shorter of the two). */
export function firstDivergence(stock: readonly GreedyStep[], patched: readonly GreedyStep[]): Divergence | null {
  const n = Math.min(stock.length, patched.length);
  for (let i = 0; i < n; i++)
    if (stock[i]!.token !== patched[i]!.token) return { index: i, stock: stock[i]!, patched: patched[i]! };
  return null;
}

/** A step's margin: its token's probability minus the runner-up's (how close the choice was). */
export function marginOf(step: GreedyStep): number {
  return step.probability - (step.runnerUp?.probability ?? 0);
}

/** The child's entry: built from node-llama-cpp-child.ts beside the CLI. */
function childEntry(): string {
  return path.join(packageRoot(), 'dist', 'bench-node-llama-cpp.js');
}

/** How a child ended and what it printed. */
export interface ChildOutcome {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  result: ChildResult | null;
  stderr: string;
  seconds: number;
}

/** The most of a child's output kept (its result is a few kilobytes; node-llama-cpp's log can be more). */
const OUTPUT_LIMIT = 16 * 1024 * 1024;

/**
 * Runs one child for `job` in `job.cwd`; never throws for how it ended (the caller decides). When `stop` aborts (bench
 * was sent SIGINT, which a terminal's Ctrl-C also sends the child itself), the child is sent SIGINT too. The child
 * starts as doctor's runner does (nodeChildStart); where nothing can start it, rejects at once with ERR_CHILD_HOST.
 */
export function runChild(job: ChildJob, stop?: AbortSignal): Promise<ChildOutcome> {
  const started = process.hrtime.bigint();
  const start = nodeChildStart(hostProcess());
  if (start.how === 'none')
    return Promise.reject(
      childHostError('bench --node-llama-cpp', start.why, 'Run `npx metal-cap-shim bench` from a terminal.'),
    );
  return new Promise((resolve, reject) => {
    const child = startNodeChild(childEntry(), start, { cwd: job.cwd, env: process.env, input: JSON.stringify(job) });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let size = 0;
    const keep = (into: Buffer[]) => (chunk: Buffer) => {
      size += chunk.length;
      if (size <= OUTPUT_LIMIT) into.push(chunk);
    };
    child.stdout.on('data', keep(out));
    child.stderr.on('data', keep(err));
    child.on('error', reject);
    const interrupt = () => child.kill('SIGINT');
    if (stop?.aborted) interrupt();
    else stop?.addEventListener('abort', interrupt, { once: true });
    child.on('close', (exitCode, signal) => {
      stop?.removeEventListener('abort', interrupt);
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const stdout = Buffer.concat(out).toString('utf8');
      const last = stdout.trim().split('\n').at(-1) ?? '';
      let result: ChildResult | null = null;
      if (exitCode === 0 && signal === null) {
        try {
          result = JSON.parse(last) as ChildResult;
        } catch {
          result = null;
        }
      }
      resolve({ exitCode, signal, result, stderr: Buffer.concat(err).toString('utf8'), seconds });
    });
  });
}
