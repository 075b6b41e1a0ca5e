import path from 'node:path';
import { runBench, runNodeLlamaCppBench, type BenchResult, type BenchSide } from '../bench/run.js';
import { GREEDY_TOKENS } from '../bench/node-llama-cpp.js';
import { FIDELITY_TOLERANCE } from '../bench/perplexity.js';
import { UsageError } from '../core/errors.js';
import { formatBench } from '../format/bench.js';
import { saidOnce } from '../patch/plan.js';
import { DEFAULT_PROFILE, resolveProfile } from '../patch/profiles.js';
import { profileArgument } from './profile-option.js';
import { err, EXIT, out, printJson, styler, text, type Command } from './shared.js';

const DEFAULT_ROUNDS = 3;
const MAX_ROUNDS = 100;

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

/** node-llama-cpp's tests, as llama-bench's defaults: pp512 and tg128. */
const NLC_DEFAULTS = { promptTokens: 512, genTokens: 128 };
const MAX_TOKENS = 65536;

const command: Command = {
  help: () => `Usage: metal-cap-shim bench [--profile P[,Q…]] [--rounds N] [--json] -- llama-bench [its args…]
       metal-cap-shim bench --fidelity [--profile P[,Q…]] [--json] -- llama-perplexity -m MODEL [-f TEXT] [its args…]
       metal-cap-shim bench --node-llama-cpp --model MODEL [--project DIR] [--profile P[,Q…]] [--rounds N] [--json]

Runs a llama.cpp tool stock and under each profile (injected as exec injects it) and compares what it measured.

  --profile P[,Q…]   the profiles to compare with stock, comma-separated (default ${DEFAULT_PROFILE}); a built-in
                     name, JSON or a .json file each, as exec takes them
  --rounds N         speed: interleaved rounds (default ${DEFAULT_ROUNDS}; 1 to ${MAX_ROUNDS}); each round runs stock and every
                     profile, the order turning by one each round, so drift and heat fall on all alike
  --fidelity         llama-perplexity: stock saves its logits (--kl-divergence-base, in a private folder,
                     removed after), each profile is compared with them (--kl-divergence); without -f, the
                     package's README is the text
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
  --force            allow raising answers on a host that is not a VM
  --json             the result as JSON (schema metal-cap-shim/bench@1): llama-bench's records, every run,
                     the profiles as applied, the device's stock and patched answers

Speed: one row per llama-bench test (pp512, tg128, …): stock t/s, each profile's t/s and its speed-up, the
median of each round's ratio to that round's stock run, with the lowest and highest. bench adds -o json when
no output format is given; csv, md and sql are refused (it reads json or jsonl).
node-llama-cpp: the same rows (node-llama-cpp pp512, tg128), then per profile the first token where its greedy
generation leaves stock's, with each side's token, probability and margin over its runner-up there.
Fidelity: mean KL divergence, its 99th percentile, how often the top token is the same, the perplexity ratio,
and a verdict: within tolerance when mean KLD ≤ ${FIDELITY_TOLERANCE.meanKld}, same top token ≥ ${FIDELITY_TOLERANCE.sameTopP} % and PPL ratio within
1 ± ${FIDELITY_TOLERANCE.pplRatio}; else differs.
Ctrl-C stops the tool and prints what was measured so far (exit 130).
Exit ${EXIT.ok} when measured (fidelity: every profile within tolerance; node-llama-cpp: the same greedy tokens); ${EXIT.finding}
when a profile differs or the tool failed (its exit status is named, never taken as a result); ${EXIT.usage} usage
(node-llama-cpp not installed: ERR_BENCH_NO_NODE_LLAMA_CPP); ${EXIT.refused} refused; ${EXIT.noMetal} no Metal here;
${EXIT.notRunnable} the tool cannot be run, ${EXIT.notFound} it is not found (as exec).`,
  options: {
    profile: { type: 'string' },
    rounds: { type: 'string' },
    fidelity: { type: 'boolean' },
    'node-llama-cpp': { type: 'boolean' },
    model: { type: 'string' },
    project: { type: 'string' },
    'prompt-tokens': { type: 'string' },
    'gen-tokens': { type: 'string' },
    threads: { type: 'string' },
    force: { type: 'boolean' },
    json: { type: 'boolean' },
  },
  positionals: 'after-dashdash',
  noProgramWith: 'node-llama-cpp',
  async run({ values, rest }) {
    const fidelity = values.fidelity === true;
    const nlc = values['node-llama-cpp'] === true;
    if (fidelity && nlc)
      throw new UsageError('--fidelity is for llama-perplexity; --node-llama-cpp measures on its own');
    if (fidelity && values.rounds !== undefined)
      throw new UsageError('--rounds is for speed: --fidelity compares one run of each profile with stock');
    if (nlc && values.model === undefined)
      throw new UsageError('--node-llama-cpp needs --model MODEL (the GGUF file to load)');
    for (const o of ['model', 'project', 'prompt-tokens', 'gen-tokens', 'threads'])
      if (!nlc && values[o] !== undefined)
        throw new UsageError(`--${o} is for --node-llama-cpp; a llama.cpp tool takes its own options after \`--\``);
    const rounds = fidelity ? 1 : benchRounds(text(values, 'rounds'));
    const profiles = benchProfiles(text(values, 'profile'));
    let stopped = false;
    // node-llama-cpp's children are sent the SIGINT bench gets; exec forwards it to a llama.cpp tool.
    const interrupted = new AbortController();
    const stop = () => {
      stopped = true;
      interrupted.abort();
    };
    process.on('SIGINT', stop);
    const progress = process.stderr.isTTY && values.json !== true;
    const started = Date.now();
    const sides = [{ name: 'stock', profile: null }, ...profiles];
    const shared = {
      rounds,
      force: values.force === true,
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
          })
        : await runBench({
            ...shared,
            command: rest[0]!,
            args: rest.slice(1),
            sides,
            mode: fidelity ? 'fidelity' : 'speed',
          });
      if (progress) process.stderr.write('\r\x1b[K');
      if (values.json) printJson(result);
      else out(formatBench(result, styler()));
      if (result.interrupted) return 130;
      const differs =
        result.fidelity?.some((f) => f.verdict === 'differs') ||
        result.greedy?.profiles.some((p) => p.divergence !== null);
      return differs ? EXIT.finding : EXIT.ok;
    } catch (e) {
      // The line goes before the error is said, as before a result.
      if (progress) process.stderr.write('\r\x1b[K');
      throw e;
    } finally {
      process.off('SIGINT', stop);
    }
  },
};

export default command;
