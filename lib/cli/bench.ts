import { runBench, type BenchSide } from '../bench/run.js';
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

/** `--rounds N`: a whole number from 1 to MAX_ROUNDS. */
export function benchRounds(given: string | undefined): number {
  if (given === undefined) return DEFAULT_ROUNDS;
  const n = Number(given);
  if (!/^\d+$/.test(given.trim()) || n < 1 || n > MAX_ROUNDS)
    throw new UsageError(`--rounds takes a whole number from 1 to ${MAX_ROUNDS}, not '${given}'`);
  return n;
}

const command: Command = {
  help: () => `Usage: metal-cap-shim bench [--profile P[,Q…]] [--rounds N] [--json] -- llama-bench [its args…]
       metal-cap-shim bench --fidelity [--profile P[,Q…]] [--json] -- llama-perplexity -m MODEL [-f TEXT] [its args…]

Runs a llama.cpp tool stock and under each profile (injected as exec injects it) and compares what it measured.

  --profile P[,Q…]   the profiles to compare with stock, comma-separated (default ${DEFAULT_PROFILE}); a built-in
                     name, JSON or a .json file each, as exec takes them
  --rounds N         speed: interleaved rounds (default ${DEFAULT_ROUNDS}; 1 to ${MAX_ROUNDS}); each round runs stock and every
                     profile, the order turning by one each round, so drift and heat fall on all alike
  --fidelity         llama-perplexity: stock saves its logits (--kl-divergence-base, in a private folder,
                     removed after), each profile is compared with them (--kl-divergence); without -f, the
                     package's README is the text
  --force            allow raising answers on a host that is not a VM
  --json             the result as JSON (schema metal-cap-shim/bench@1): llama-bench's records, every run,
                     the profiles as applied, the device's stock and patched answers

Speed: one row per llama-bench test (pp512, tg128, …): stock t/s, each profile's t/s and its speed-up, the
median of each round's ratio to that round's stock run, with the lowest and highest. bench adds -o json when
no output format is given; csv, md and sql are refused (it reads json or jsonl).
Fidelity: mean KL divergence, its 99th percentile, how often the top token is the same, the perplexity ratio,
and a verdict: within tolerance when mean KLD ≤ ${FIDELITY_TOLERANCE.meanKld}, same top token ≥ ${FIDELITY_TOLERANCE.sameTopP} % and PPL ratio within
1 ± ${FIDELITY_TOLERANCE.pplRatio}; else differs.
Ctrl-C stops the tool and prints what was measured so far (exit 130).
Exit ${EXIT.ok} when measured (fidelity: every profile within tolerance); ${EXIT.finding} when a profile differs or the tool
failed (its exit status is named, never taken as a result); ${EXIT.usage} usage; ${EXIT.refused} refused; ${EXIT.noMetal} no Metal here.`,
  options: {
    profile: { type: 'string' },
    rounds: { type: 'string' },
    fidelity: { type: 'boolean' },
    force: { type: 'boolean' },
    json: { type: 'boolean' },
  },
  positionals: 'after-dashdash',
  async run({ values, rest }) {
    const fidelity = values.fidelity === true;
    if (fidelity && values.rounds !== undefined)
      throw new UsageError('--rounds is for speed: --fidelity compares one run of each profile with stock');
    const rounds = fidelity ? 1 : benchRounds(text(values, 'rounds'));
    const profiles = benchProfiles(text(values, 'profile'));
    let stopped = false;
    const stop = () => {
      stopped = true;
    };
    process.on('SIGINT', stop);
    const progress = process.stderr.isTTY && values.json !== true;
    const started = Date.now();
    try {
      const result = await runBench({
        command: rest[0]!,
        args: rest.slice(1),
        sides: [{ name: 'stock', profile: null }, ...profiles],
        rounds,
        mode: fidelity ? 'fidelity' : 'speed',
        force: values.force === true,
        stopped: () => stopped,
        // Said once, before the first run.
        onPlanned: (planned) => {
          for (const p of planned)
            for (const w of saidOnce(p.warnings)) err(`metal-cap-shim: warning: ${p.name}: ${w.message}`);
        },
        ...(progress
          ? {
              onRun: (r) => {
                const s = ((Date.now() - started) / 1000).toFixed(0);
                process.stderr.write(
                  `\r\x1b[Kbench: round ${r.round}/${r.rounds}, ${r.side} (${r.index}/${r.total}) … ${s} s`,
                );
              },
            }
          : {}),
      });
      if (progress) process.stderr.write('\r\x1b[K');
      if (values.json) printJson(result);
      else out(formatBench(result, styler()));
      if (result.interrupted) return 130;
      return result.fidelity?.some((f) => f.verdict === 'differs') ? EXIT.finding : EXIT.ok;
    } finally {
      process.off('SIGINT', stop);
    }
  },
};

export default command;
