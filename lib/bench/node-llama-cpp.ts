/**
 * `bench --node-llama-cpp`: the measurement for apps that embed node-llama-cpp. node-llama-cpp is the user's (an
 * optional peer dependency this package never installs), found from the folder bench runs in, as the user's own app
 * would find it. Each run is a child process (dist/bench-node-llama-cpp.js, node-llama-cpp-child.ts) for one side: stock,
 * or with the profile applied before getLlama(), as `metal-cap-shim/register` applies it in an app. It warms up (timed
 * apart), then measures prompt processing and generation in tokens per second over several repetitions, as
 * llama-bench does, and generates GREEDY_TOKENS tokens greedily after a fixed prompt; each profile's tokens are
 * compared with stock's (the first divergence, with each side's margin there).
 */
import { readFileSync, realpathSync, statSync, type Stats } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { BenchError } from '../core/errors.js';
import { isObject } from '../core/input.js';
import { childHostError, hostProcess, nodeChildStart, startNodeChild } from '../core/node-child.js';
import { foreignFolderBecause } from '../core/safefs.js';
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
  /** Apply a threadgroup claim above every Apple GPU's (the plan refuses it otherwise). */
  allowAboveHardware?: boolean;
  promptTokens: number;
  genTokens: number;
  /** node-llama-cpp's threads; null for its own default. */
  threads: number | null;
  /** Timed evaluations of each test per run, after the warm-up. */
  repetitions: number;
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
  /**
   * The warm-up before the timed evaluations: the whole prompt and WARMUP_GEN_TOKENS generated tokens, so every
   * pipeline the timed tests use is compiled (ggml-metal compiles each on first use); its time is that compile cost.
   */
  warmup: { seconds: number };
  /** Each repetition's seconds for the same tokens. */
  pp: Timed;
  tg: Timed;
  greedy: GreedyStep[];
}

/** A test's tokens and each repetition's seconds. */
export interface Timed {
  tokens: number;
  seconds: number[];
}

/** How many tokens the warm-up generates after its prompt (llama-bench's own warm-up generates one). */
export const WARMUP_GEN_TOKENS = 4;

/**
 * A test's tokens per second as llama-bench reports them (`avg_ts`, `stddev_ts` in llama-bench.cpp): the mean of each
 * repetition's tokens/seconds, and their sample standard deviation (0 for one repetition).
 */
export function tokensPerSecond(t: Timed): { avgTs: number; stddevTs: number } {
  const ts = t.seconds.map((s) => t.tokens / s);
  const n = ts.length;
  const mean = ts.reduce((a, b) => a + b, 0) / n;
  if (n <= 1) return { avgTs: mean, stddevTs: 0 };
  const squares = ts.reduce((a, b) => a + (b - mean) ** 2, 0);
  return { avgTs: mean, stddevTs: Math.sqrt(squares / (n - 1)) };
}

/** A probability as a child writes it: a number from 0 to 1 (NaN, which JSON writes as null, is none). */
const isProbability = (x: unknown) => typeof x === 'number' && x >= 0 && x <= 1;

/** A greedy step as the formatter and the comparison read it: a token, its text and probability, the runner-up's. */
function isGreedyStep(g: unknown): boolean {
  if (!isObject(g) || !Number.isSafeInteger(g.token) || typeof g.text !== 'string' || !isProbability(g.probability))
    return false;
  const r = g.runnerUp;
  return (
    r === null ||
    (isObject(r) && Number.isSafeInteger(r.token) && typeof r.text === 'string' && isProbability(r.probability))
  );
}

/**
 * A child's last line read as its result, every field checked (it is another process's output): the result, or what is
 * wrong with it. `repetitions` is how many timed evaluations the job asked for.
 */
export function readChildResult(line: string, repetitions: number): { result: ChildResult } | { problem: string } {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    return { problem: 'its last line is not JSON' };
  }
  if (!isObject(v)) return { problem: 'its result is not an object' };
  const positive = (x: unknown) => typeof x === 'number' && Number.isFinite(x) && x > 0;
  const timed = (x: unknown) =>
    isObject(x) &&
    Number.isInteger(x.tokens) &&
    (x.tokens as number) > 0 &&
    Array.isArray(x.seconds) &&
    x.seconds.length === repetitions &&
    x.seconds.every(positive);
  const problems = [
    typeof v.nodeLlamaCpp === 'string' ? null : 'nodeLlamaCpp',
    v.llamaCpp === null || typeof v.llamaCpp === 'string' ? null : 'llamaCpp',
    v.gpu === false || typeof v.gpu === 'string' ? null : 'gpu',
    typeof v.applied === 'boolean' ? null : 'applied',
    v.notApplied === null || typeof v.notApplied === 'string' ? null : 'notApplied',
    isObject(v.warmup) && positive(v.warmup.seconds) ? null : 'warmup.seconds',
    timed(v.pp) ? null : `pp (its tokens and ${repetitions} times above 0)`,
    timed(v.tg) ? null : `tg (its tokens and ${repetitions} times above 0)`,
    Array.isArray(v.greedy) && v.greedy.every(isGreedyStep) ? null : 'greedy',
  ].filter((p): p is string => p !== null);
  return problems.length === 0
    ? { result: v as unknown as ChildResult }
    : { problem: `its result has no usable ${problems.join(', ')}` };
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

/** Where findProjectPackage found a package, or why it found none (`stoppedAt`: the folder it would not climb to). */
export type PackageSearch = { folder: string; modules: string } | { folder: null; stoppedAt: string | null };

/** The stats of `file` (links followed), or null when it does not exist. */
function statIfThere(file: string): Stats | null {
  try {
    return statSync(file);
  } catch {
    return null;
  }
}

/**
 * The folder whose node_modules holds `name` for the project in `project`, as Node would find it but only through
 * folders nobody else could have planted it in: the project's own node_modules, then each parent's (workspaces hoist
 * packages), climbing only to a folder that is ours or root's and that nobody else may write, and taking a
 * node_modules and a package folder only when they are ours or root's and nobody else may write them. A package
 * another user left in /tmp/node_modules, or in a parent they own, never runs as you. Global folders (NODE_PATH,
 * ~/.node_modules) are never looked at.
 */
export function findProjectPackage(project: string, name: string): PackageSearch {
  let at: string;
  try {
    at = realpathSync(project);
  } catch {
    return { folder: null, stoppedAt: null };
  }
  for (;;) {
    const modules = path.join(at, 'node_modules');
    const modulesStats = statIfThere(modules);
    if (modulesStats?.isDirectory()) {
      const why = foreignFolderBecause(modulesStats);
      if (why !== null) return { folder: null, stoppedAt: `${modules}, which ${why}` };
      const packageStats = statIfThere(path.join(modules, name));
      if (packageStats?.isDirectory()) {
        const packageWhy = foreignFolderBecause(packageStats);
        if (packageWhy !== null) return { folder: null, stoppedAt: `${path.join(modules, name)}, which ${packageWhy}` };
        return { folder: at, modules };
      }
    }
    const parent = path.dirname(at);
    if (parent === at) return { folder: null, stoppedAt: null };
    const parentStats = statIfThere(parent);
    const why = parentStats === null ? 'cannot be examined' : foreignFolderBecause(parentStats);
    if (why !== null) return { folder: null, stoppedAt: `${parent}, which ${why}` };
    at = parent;
  }
}

/**
 * node-llama-cpp's entry as the user's project in `project` resolves it, found by findProjectPackage; throws BenchError
 * ERR_BENCH_NO_NODE_LLAMA_CPP saying what to do when it is not there (or only where another user could have planted it)
 * or older than 3.6.0. This package never installs it (an optional peer dependency).
 */
export function resolveNodeLlamaCpp(project: string): { entry: string; version: string } {
  const found = findProjectPackage(project, 'node-llama-cpp');
  const missing = (): never => {
    const stopped =
      found.folder === null && found.stoppedAt !== null
        ? `; the search stopped at ${found.stoppedAt} (a package there could have been planted by another user)`
        : '';
    throw new BenchError(
      'ERR_BENCH_NO_NODE_LLAMA_CPP',
      `node-llama-cpp is not installed in ${project} (bench --node-llama-cpp uses your project's own)${stopped}: run bench from your project's folder or name it with --project DIR, or install it there with \`npm install node-llama-cpp\``,
    );
  };
  if (found.folder === null) return missing();
  const dir = realpathSync(path.join(found.modules, 'node-llama-cpp'));
  let entry: string;
  try {
    // From the folder found, Node's first candidate is the package checked there: nothing above it is reached.
    entry = createRequire(path.join(found.folder, 'package.json')).resolve('node-llama-cpp');
  } catch {
    return missing();
  }
  if (!entry.startsWith(`${dir}${path.sep}`)) return missing();
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
      `node-llama-cpp ${version} in ${project} is older than 3.${OLDEST_MINOR}.0, the first bench --node-llama-cpp can drive (evaluateWithMetadata): update it there with \`npm install node-llama-cpp@latest\``,
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
  /** Null unless the child exited 0: the result its last line holds, checked (readChildResult). */
  result: ChildResult | null;
  /** Why an exit-0 child has no result (null when it has one, or did not exit 0). */
  problem: string | null;
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
      const read = exitCode === 0 && signal === null ? readChildResult(last, job.repetitions) : null;
      resolve({
        exitCode,
        signal,
        result: read !== null && 'result' in read ? read.result : null,
        problem: read !== null && 'problem' in read ? read.problem : null,
        stderr: Buffer.concat(err).toString('utf8'),
        seconds,
      });
    });
  });
}
