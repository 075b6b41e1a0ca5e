/**
 * llama-perplexity's KL-divergence mode, as `bench --fidelity` uses it: the stock run saves the logits
 * (`--kl-divergence-base FILE`), each patched run compares against them (`--kl-divergence`), and its output is read
 * here (`kl_divergence()` in tools/perplexity/perplexity.cpp).
 *
 * Every chunk prints one row: chunk, PPL ± u, ln(PPL(Q)/PPL(base)) ± u, KL divergence ± u, Δp RMS ± u %, same top p
 * ± u % (running values over the chunks so far). With at least 100 scored tokens a statistics section follows: `Mean
 * KLD`, `99.0% KLD`, `Maximum KLD`, `Mean PPL(Q)/PPL(base)`, `Same top p`. The tool returns 0 even when it could not
 * read the logits file, so only a row is a result.
 */
import { BenchError, UsageError } from '../core/errors.js';

/** What one patched run measured against the stock logits. */
export interface Fidelity {
  /** Mean KL divergence per token, in nats. */
  meanKld: number;
  /** The 99th percentile of the per-token KL divergence (null: fewer than 100 tokens, the tool prints none). */
  kld99: number | null;
  maxKld: number | null;
  /** How often the most likely token is the same, in percent. */
  sameTopP: number;
  /** PPL(patched) / PPL(stock). */
  pplRatio: number;
  /** How many chunks the tool scored (its last row's number). */
  chunks: number;
}

/**
 * The tolerances a patched run must stay within to count as the same model. A patch changes which kernels run, so
 * the order of floating-point sums, and nothing else: a difference well below what 8-bit quantization costs (mean KLD
 * of the order of 10⁻³ nats and 97–99 % same top token, in published llama.cpp runs) is noise; anything above is
 * the kernels computing something else. docs/bench.md gives the reasoning.
 */
export const FIDELITY_TOLERANCE = Object.freeze({
  /** Mean KLD at most this many nats. */
  meanKld: 0.001,
  /** Same top token at least this percentage. */
  sameTopP: 99,
  /** PPL(patched)/PPL(stock) within 1 ± this. */
  pplRatio: 0.01,
});

/** Whether a run is within FIDELITY_TOLERANCE, and if not, every reason. */
export function fidelityVerdict(f: Fidelity): { verdict: 'within-tolerance' | 'differs'; reasons: string[] } {
  const t = FIDELITY_TOLERANCE;
  const reasons = [
    f.meanKld > t.meanKld ? `mean KLD ${f.meanKld} is above ${t.meanKld}` : null,
    f.sameTopP < t.sameTopP ? `same top token ${f.sameTopP} % is below ${t.sameTopP} %` : null,
    f.pplRatio > 1 + t.pplRatio || f.pplRatio < 1 - t.pplRatio
      ? `PPL ratio ${f.pplRatio} is outside 1 ± ${t.pplRatio}`
      : null,
  ].filter((r): r is string => r !== null);
  return { verdict: reasons.length === 0 ? 'within-tolerance' : 'differs', reasons };
}

const NUMBER = String.raw`[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?nan|[-+]?inf`;
const PM = String.raw`\s*±\s*(?:${NUMBER})`;
/** A chunk row: `%4d` then five `value ± uncertainty` columns, the last two in percent. */
const CHUNK_ROW = new RegExp(
  String.raw`^\s*(\d+)\s+(${NUMBER})${PM}\s+(${NUMBER})${PM}\s+(${NUMBER})${PM}\s+(${NUMBER})${PM}\s*%\s+(${NUMBER})${PM}\s*%\s*$`,
);
const STAT = (label: string) => new RegExp(String.raw`^${label}\s*:\s*(${NUMBER})`);
const MEAN_KLD = STAT(String.raw`Mean\s+KLD`);
const KLD_99 = STAT(String.raw`99\.0%\s+KLD`);
const MAX_KLD = STAT(String.raw`Maximum\s+KLD`);
const PPL_RATIO = STAT(String.raw`Mean PPL\(Q\)/PPL\(base\)\s*`);
const SAME_TOP = STAT('Same top p');

const finite = (text: string | undefined): number | null => {
  const n = Number(text);
  return text !== undefined && Number.isFinite(n) ? n : null;
};

/**
 * The fidelity a `--kl-divergence` run printed. Throws BenchError ERR_BENCH_OUTPUT when there is no chunk row (the
 * tool could not read the logits, or the text was too short for one chunk). Linear in the text.
 */
export function parseKlDivergence(text: string): Fidelity {
  let row: RegExpExecArray | null = null;
  const stats: { mean?: number; k99?: number; max?: number; ratio?: number; top?: number } = {};
  for (const line of text.split('\n')) {
    const r = CHUNK_ROW.exec(line);
    if (r !== null) {
      row = r;
      continue;
    }
    const take = (re: RegExp, key: keyof typeof stats) => {
      const m = re.exec(line.trim());
      const v = m === null ? null : finite(m[1]);
      if (v !== null) stats[key] = v;
    };
    take(MEAN_KLD, 'mean');
    take(KLD_99, 'k99');
    take(MAX_KLD, 'max');
    take(PPL_RATIO, 'ratio');
    take(SAME_TOP, 'top');
  }
  if (row === null) {
    throw new BenchError(
      'ERR_BENCH_OUTPUT',
      'llama-perplexity printed no KL-divergence row: it could not read the stock logits, or the text is shorter than one chunk (2 × the context size in tokens)',
    );
  }
  const lnRatio = finite(row[3]);
  const rowKld = finite(row[4]);
  const rowTop = finite(row[6]);
  if (lnRatio === null || rowKld === null || rowTop === null)
    throw new BenchError(
      'ERR_BENCH_OUTPUT',
      `llama-perplexity's last KL-divergence row has no number: ${row[0].trim()}`,
    );
  return {
    meanKld: stats.mean ?? rowKld,
    kld99: stats.k99 ?? null,
    maxKld: stats.max ?? null,
    sameTopP: stats.top ?? rowTop,
    pplRatio: stats.ratio ?? Math.exp(lnRatio),
    chunks: Number(row[1]),
  };
}

/** The options of llama-perplexity that `bench --fidelity` sets itself, and so refuses from the user. */
const OWN_OPTIONS = ['--kl-divergence', '--kl-divergence-base', '--hellaswag', '--winogrande', '--multiple-choice'];

/**
 * Checks the user's llama-perplexity arguments: the KL-divergence options are bench's to set, and a text must be there
 * (`-f`/`--file`), else `defaultText` is added. Returns the arguments and the text used.
 */
export function perplexityArgs(args: readonly string[], defaultText: string): { args: string[]; text: string } {
  const own = args.find((a) => OWN_OPTIONS.includes(a.split('=')[0]!));
  if (own !== undefined)
    throw new UsageError(
      `bench --fidelity sets ${own} itself (stock saves the logits, each profile compares): drop it`,
    );
  const at = args.findIndex((a) => a === '-f' || a === '--file');
  if (at >= 0 && at + 1 >= args.length) throw new UsageError(`llama-perplexity's ${args[at]} needs a text file`);
  if (at >= 0) return { args: [...args], text: args[at + 1]! };
  return { args: [...args, '-f', defaultText], text: defaultText };
}
