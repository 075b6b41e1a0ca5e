import path from 'node:path';
import {
  MAX_ADAPTIVE_ROUNDS,
  runBench,
  runNodeLlamaCppBench,
  type BenchResult,
  type BenchSide,
  type BenchSignal,
  type RoundOptions,
} from '../bench/run.js';
import { llamaBenchExport, resultCommits } from '../bench/export.js';
import { CONFIDENCE, INTERVAL_METHOD } from '../bench/stats.js';
import { GREEDY_TOKENS } from '../bench/node-llama-cpp.js';
import { FIDELITY_TOLERANCE } from '../bench/perplexity.js';
import { FileError, UsageError } from '../core/errors.js';
import { writeFileSafely } from '../core/safefs.js';
import { formatBench } from '../format/bench.js';
import { saidOnce } from '../patch/plan.js';
import { DEFAULT_PROFILE, resolveProfile } from '../patch/profiles.js';
import { profileArgument } from './profile-option.js';
import { SIGNAL_EXIT } from './exit.js';
import { err, EXIT, outText, printJson, styler, text, type Command, type Values } from './shared.js';

/**
 * Five rounds: with llama-bench's usual round-to-round noise on a quiet Mac (a few per cent), a paired 95 % interval
 * over five rounds (t = 2.78 on 4 degrees of freedom) is narrow enough to find a true 1.10x in most rows, where three
 * (t = 4.30) would call most of them "no difference shown" (docs/bench.md works it through).
 */
const DEFAULT_ROUNDS = 5;
const MAX_ROUNDS = 100;
/** The signals bench stops on cleanly, keeping what was measured. */
const STOP_SIGNALS: readonly BenchSignal[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/** `--profile P[,Q…]`: the profiles, in order; a JSON profile or a file is one profile (never split at commas). */
export function benchProfiles(given: string | undefined): BenchSide[] {
  const value = (given ?? DEFAULT_PROFILE).trim();
  const parts = value.startsWith('{') ? [value] : value.split(',').map((p) => p.trim());
  if (parts.some((p) => p === '')) throw new UsageError(`--profile '${value}' has an empty name between commas`);
  const sides = parts.map((p) => {
    const profile = resolveProfile(profileArgument(p));
    return { name: profile.name ?? 'custom', profile };
  });
  const names = sides.map((s) => s.name);
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice !== undefined)
    throw new UsageError(`--profile names ${twice} twice: each profile is measured once a round`);
  return sides;
}

/** A whole-number option from `min` to `max`; `fallback` when not given. */
function wholeNumber(option: string, given: string | undefined, fallback: number, min: number, max: number): number {
  if (given === undefined) return fallback;
  const n = Number(given);
  if (!/^\d+$/.test(given.trim()) || n < min || n > max)
    throw new UsageError(`--${option} takes a whole number from ${min} to ${max}, not '${given}'`);
  return n;
}

/** `--rounds N`: a whole number from 1 to MAX_ROUNDS. */
export function benchRounds(given: string | undefined): number {
  return wholeNumber('rounds', given, DEFAULT_ROUNDS, 1, MAX_ROUNDS);
}

/** `--precision P%` as a fraction: a number above 0 and at most 50, with or without `%`; undefined when not given. */
export function benchPrecision(given: string | undefined): number | null {
  if (given === undefined) return null;
  const m = /^\s*(\d+(?:\.\d+)?)\s*%?\s*$/.exec(given);
  const n = m === null ? Number.NaN : Number(m[1]);
  if (!(n > 0 && n <= 50))
    throw new UsageError(`--precision takes a percentage above 0 and at most 50 (such as 2%), not '${given}'`);
  return n / 100;
}

/** The rounds options: --rounds, and --precision with its caps (which need it). */
export function roundOptions(values: Values): RoundOptions {
  const rounds = benchRounds(text(values, 'rounds'));
  const precision = benchPrecision(text(values, 'precision'));
  for (const o of ['max-rounds', 'max-time'])
    if (precision === null && values[o] !== undefined)
      throw new UsageError(`--${o} caps --precision's adaptive rounds: give --precision too, or use --rounds alone`);
  const maxRounds = wholeNumber(
    'max-rounds',
    text(values, 'max-rounds'),
    Math.max(rounds, MAX_ADAPTIVE_ROUNDS),
    2,
    MAX_ROUNDS,
  );
  if (maxRounds < rounds)
    throw new UsageError(
      `--max-rounds ${maxRounds} is below --rounds ${rounds}: the cap cannot be under the rounds always run`,
    );
  const maxSeconds =
    values['max-time'] === undefined ? null : wholeNumber('max-time', text(values, 'max-time'), 0, 1, 7 * 24 * 3600);
  return { rounds, precision, maxRounds, maxSeconds };
}

/** node-llama-cpp's tests, as llama-bench's defaults: pp512 and tg128. */
const NLC_DEFAULTS = { promptTokens: 512, genTokens: 128, repetitions: 3 };
const MAX_REPETITIONS = 100;
const MAX_TOKENS = 65536;

/** Writes the export for compare-llama-bench.py to `file` and says which commit is which side. */
function writeExport(file: string, result: BenchResult): void {
  const jsonl = llamaBenchExport(result);
  try {
    writeFileSafely(file, jsonl);
  } catch (e) {
    throw new FileError(`--export-llama-bench ${(e as Error).message}`);
  }
  const [stock, ...profiles] = [...resultCommits(result).values()];
  err(
    `metal-cap-shim: wrote ${file}; llama.cpp's scripts/compare-llama-bench.py -t llama-bench -i ${file} -b ${stock} -c P compares stock with P, P one of: ${profiles.join(', ')}`,
  );
}

const command: Command = {
  help: () => `Usage: metal-cap-shim bench [--profile P[,Q…]] [--rounds N] [--precision P% [--max-rounds N] [--max-time S]]
                             [--json] -- llama-bench [its args…]
       metal-cap-shim bench --fidelity [--control] [--profile P[,Q…]] [--json] -- llama-perplexity -m MODEL [-f TEXT] [its args…]
       metal-cap-shim bench --node-llama-cpp --model MODEL [--project DIR] [--profile P[,Q…]] [--rounds N] [--repetitions N] [--json]

Runs a llama.cpp tool stock and under each profile (injected as exec injects it) and compares what it measured.

  --profile P[,Q…]   the profiles to compare with stock, comma-separated (default ${DEFAULT_PROFILE}); a built-in
                     name, JSON or a .json file each, as exec takes them
  --rounds N         speed: interleaved rounds (default ${DEFAULT_ROUNDS}; 1 to ${MAX_ROUNDS}); each round runs stock and every
                     profile, the order turning by one each round, so drift and heat fall on all alike
  --precision P%     speed: after --rounds, more rounds until every speed-up's 95 % interval is within ±P %
                     (such as 2%), or a cap is reached; the result says which
  --max-rounds N     with --precision: the most rounds (default ${MAX_ADAPTIVE_ROUNDS})
  --max-time S       with --precision: no round starts after S seconds of measuring
  --fidelity         llama-perplexity: stock saves its logits (--kl-divergence-base, in a private folder,
                     removed after), each profile is compared with them (--kl-divergence); without -f, the
                     package's README is the text
  --control          fidelity: also compare a second stock run with stock's logits, the row stock (control):
                     the noise floor a profile's numbers are read against
  --node-llama-cpp   the same for apps that embed node-llama-cpp: the project's own node-llama-cpp (found from
                     --project; this package never installs it), a process per side and round, the
                     profile applied before getLlama(); prompt processing and generation t/s, and ${GREEDY_TOKENS} tokens
                     generated greedily after a fixed prompt, each profile's compared with stock's
  --model MODEL      node-llama-cpp: the GGUF model
  --project DIR      node-llama-cpp: your project (default the current folder): node-llama-cpp is taken from its
                     node_modules, or a parent's only through folders of yours or root's that nobody else may write
  --prompt-tokens N  node-llama-cpp: the prompt-processing test's tokens (default ${NLC_DEFAULTS.promptTokens})
  --gen-tokens N     node-llama-cpp: the generation test's tokens (default ${NLC_DEFAULTS.genTokens})
  --threads N        node-llama-cpp: its threads (default its own)
  --repetitions N    node-llama-cpp: timed evaluations per run, after one warm-up (default ${NLC_DEFAULTS.repetitions};
                     1 to ${MAX_REPETITIONS}); each run's t/s is their mean, with their standard deviation
  --force            allow raising answers on a host that is not a VM
  --allow-above-hardware
                     apply a threadgroup memory claim the newest llama.cpp rules would turn into a request
                     above every Apple GPU's 32768 bytes (refused otherwise)
  --keep-paths       keep the folders of the tool's and model's paths in the result's command (by default
                     each path is reduced to its file name: a result is meant to be sent to others)
  --json             the result as JSON (schema metal-cap-shim/bench@2): llama-bench's records, every run,
                     the profiles as applied, the device's stock and patched answers
  --export-llama-bench FILE
                     speed: also write llama-bench's records of every run as JSONL to FILE (a new file or a
                     regular file of yours, never a link) for llama.cpp's scripts/compare-llama-bench.py, each
                     side its own build_commit (stock and each profile's name, padded to one length), the
                     model's file name without its folders

Speed: one row per llama-bench test and setting (pp512, tg128, each -fa, -t, -m … of a sweep: rows are keyed
by every property llama-bench varies, as llama.cpp's compare-llama-bench.py keys them): each side's t/s (the
geometric mean over the rounds, ± llama-bench's own deviation) and each profile's speed-up, the geometric mean
of each round's ratio to that round's stock run, with its ${CONFIDENCE * 100} % interval (${INTERVAL_METHOD}): faster or
slower when the interval excludes 1x, else "no difference shown"; one round gives no interval. A run the
profile did not patch makes the result invalid (exit ${EXIT.finding}); a CPU-only tool, which no profile can change,
is said in the first line. bench adds -o json when no output format is given; csv, md and sql are refused
(it reads json or jsonl).
node-llama-cpp: the same rows (node-llama-cpp pp512, tg128; each run warmed up first, its warm-up time shown
apart), then per profile the first token where its greedy generation leaves stock's, with each side's token,
probability and margin over its runner-up there.
Fidelity: mean KL divergence, its median, 99th and 99.9th percentiles, how often the top token is the same, the
perplexity ratio and RMS Δp, each with its ± as llama-perplexity prints it, and a verdict: within tolerance
when mean KLD ≤ ${FIDELITY_TOLERANCE.meanKld}, same top token ≥ ${FIDELITY_TOLERANCE.sameTopP} % and PPL ratio within 1 ± ${FIDELITY_TOLERANCE.pplRatio}; else differs.
Ctrl-C, SIGTERM and SIGHUP stop the tool; the rounds that finished are printed and written, marked partial
(exit ${EXIT.interrupted}, ${EXIT.terminated}, ${EXIT.hangUp}). A run that fails ends the rounds the same way: its side, round
and exit status are named, and the finished rounds kept (exit ${EXIT.finding}).
Exit ${EXIT.ok} when measured (fidelity: every profile within tolerance; node-llama-cpp: the same greedy tokens); ${EXIT.finding}
when a profile differs, a run failed, or a patched side was not patched; ${EXIT.usage} usage
(node-llama-cpp not installed: ERR_BENCH_NO_NODE_LLAMA_CPP); ${EXIT.refused} refused; ${EXIT.noMetal} no Metal here;
${EXIT.notRunnable} the tool cannot be run, ${EXIT.notFound} it is not found (as exec).`,
  options: {
    profile: { type: 'string' },
    rounds: { type: 'string' },
    precision: { type: 'string' },
    'max-rounds': { type: 'string' },
    'max-time': { type: 'string' },
    fidelity: { type: 'boolean' },
    control: { type: 'boolean' },
    'node-llama-cpp': { type: 'boolean' },
    model: { type: 'string' },
    project: { type: 'string' },
    'prompt-tokens': { type: 'string' },
    'gen-tokens': { type: 'string' },
    threads: { type: 'string' },
    repetitions: { type: 'string' },
    force: { type: 'boolean' },
    'allow-above-hardware': { type: 'boolean' },
    'keep-paths': { type: 'boolean' },
    json: { type: 'boolean' },
    'export-llama-bench': { type: 'string' },
  },
  positionals: 'after-dashdash',
  noProgramWith: 'node-llama-cpp',
  async run({ values, rest }) {
    const fidelity = values.fidelity === true;
    const nlc = values['node-llama-cpp'] === true;
    if (fidelity && nlc)
      throw new UsageError('--fidelity is for llama-perplexity; --node-llama-cpp measures on its own');
    for (const o of ['rounds', 'precision', 'max-rounds', 'max-time'])
      if (fidelity && values[o] !== undefined)
        throw new UsageError(`--${o} is for speed: --fidelity compares one run of each profile with stock`);
    if (nlc && values.model === undefined)
      throw new UsageError('--node-llama-cpp needs --model MODEL (the GGUF file to load)');
    if (!fidelity && values.control !== undefined)
      throw new UsageError("--control is for --fidelity: a second stock run compared with stock's logits");
    for (const o of ['model', 'project', 'prompt-tokens', 'gen-tokens', 'threads', 'repetitions'])
      if (!nlc && values[o] !== undefined)
        throw new UsageError(`--${o} is for --node-llama-cpp; a llama.cpp tool takes its own options after \`--\``);
    const exportFile = text(values, 'export-llama-bench');
    if (exportFile !== undefined && (fidelity || nlc))
      throw new UsageError('--export-llama-bench writes llama-bench records: it is for speed (bench -- llama-bench)');
    const plan: RoundOptions = fidelity ? { rounds: 1 } : roundOptions(values);
    const profiles = benchProfiles(text(values, 'profile'));
    let stopped: BenchSignal | null = null;
    // node-llama-cpp's children are sent the signal bench gets; exec forwards it to a llama.cpp tool.
    const interrupted = new AbortController();
    const handlers = STOP_SIGNALS.map((signal) => {
      const h = () => {
        stopped ??= signal;
        interrupted.abort(signal);
      };
      process.on(signal, h);
      return [signal, h] as const;
    });
    const progress = process.stderr.isTTY && values.json !== true;
    const started = Date.now();
    const sides = [{ name: 'stock', profile: null }, ...profiles];
    const shared = {
      ...plan,
      force: values.force === true,
      allowAboveHardware: values['allow-above-hardware'] === true,
      stopped: () => stopped,
      // Said once, before the first run.
      onPlanned: (planned: BenchResult['profiles']) => {
        for (const p of planned)
          for (const w of saidOnce(p.warnings)) err(`metal-cap-shim: warning: ${p.name}: ${w.message}`);
      },
      ...(progress
        ? {
            onRun: (r: { round: number; rounds: number; side: string; index: number; total: number }) => {
              const s = ((Date.now() - started) / 1000).toFixed(0);
              process.stderr.write(
                `\r\x1b[Kbench: round ${r.round}/${r.rounds}, ${r.side} (${r.index}/${r.total}) … ${s} s`,
              );
            },
          }
        : {}),
    };
    try {
      const result = nlc
        ? await runNodeLlamaCppBench({
            ...shared,
            stop: interrupted.signal,
            // The model is named from the working folder, as the user typed it; the project may be elsewhere.
            model: path.resolve(text(values, 'model')!),
            cwd: path.resolve(text(values, 'project') ?? '.'),
            sides,
            promptTokens: wholeNumber(
              'prompt-tokens',
              text(values, 'prompt-tokens'),
              NLC_DEFAULTS.promptTokens,
              1,
              MAX_TOKENS,
            ),
            genTokens: wholeNumber('gen-tokens', text(values, 'gen-tokens'), NLC_DEFAULTS.genTokens, 1, MAX_TOKENS),
            threads: values.threads === undefined ? null : wholeNumber('threads', text(values, 'threads'), 0, 1, 1024),
            repetitions: wholeNumber(
              'repetitions',
              text(values, 'repetitions'),
              NLC_DEFAULTS.repetitions,
              1,
              MAX_REPETITIONS,
            ),
          })
        : await runBench({
            ...shared,
            command: rest[0]!,
            args: rest.slice(1),
            sides,
            mode: fidelity ? 'fidelity' : 'speed',
            control: values.control === true,
          });
      if (progress) process.stderr.write('\r\x1b[K');
      // A result is sent to others: where the tool and the model lie on this machine stays here.
      if (values['keep-paths'] !== true) result.command = withoutFolders(result.command);
      if (values.json) printJson(result);
      else outText(formatBench(result, styler()));
      if (exportFile !== undefined) writeExport(exportFile, result);
      return benchExit(result, (line) => err(line));
    } catch (e) {
      // The line goes before the error is said, as before a result.
      if (progress) process.stderr.write('\r\x1b[K');
      throw e;
    } finally {
      for (const [signal, h] of handlers) process.off(signal, h);
    }
  },
};

/** A command line with every argument that is a path (holds a `/`) reduced to its file name. */
export function withoutFolders(argv: readonly string[]): string[] {
  return argv.map((a) => (a.includes('/') ? path.basename(a) || a : a));
}

/**
 * bench's exit code for a result, saying on stderr (`say`) the one line a script needs when it is not 0: a signal's
 * code, 1 for a failed run or a patched side not patched (the result is refused), 1 for a profile that differs.
 */
export function benchExit(result: BenchResult, say: (line: string) => void): number {
  if (result.stop.signal !== null) return SIGNAL_EXIT[result.stop.signal];
  if (result.failure !== null) {
    say(`metal-cap-shim: ${result.failure.code}: ${result.stop.detail}`);
    return EXIT.finding;
  }
  if (!result.validity.valid) {
    say(`metal-cap-shim: ERR_BENCH_NOT_PATCHED: the result is not a comparison: ${result.validity.reason}`);
    return EXIT.finding;
  }
  const differs =
    result.fidelity?.some((f) => f.verdict === 'differs') || result.greedy?.profiles.some((p) => p.divergence !== null);
  return differs ? EXIT.finding : EXIT.ok;
}

export default command;
