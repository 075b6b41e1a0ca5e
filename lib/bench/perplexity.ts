/**
 * llama-perplexity's KL-divergence mode, as `bench --fidelity` uses it: the stock run saves the logits
 * (`--kl-divergence-base FILE`), each patched run compares against them (`--kl-divergence`), and its output is read
 * here (`kl_divergence()` in tools/perplexity/perplexity.cpp).
 *
 * Every chunk prints one row: chunk, PPL ± u, ln(PPL(Q)/PPL(base)) ± u, KL divergence ± u, Δp RMS ± u %, same top p
 * ± u % (running values over the chunks so far). With at least 100 scored tokens a statistics section follows, of which
 * bench reads `Mean PPL(Q)/PPL(base)` ± u, `Mean KLD` ± u, `Maximum KLD`, `99.9% KLD`, `99.0% KLD`, `Median KLD`,
 * `RMS Δp` ± u % and `Same top p` ± u %. The tool returns 0 even when it could not read the logits file, so only a row
 * is a result.
 */
import { BenchError, UsageError } from '../core/errors.js';
import { escapeControl } from '../core/escape.js';
import { clip } from '../core/input.js';

/** A statistic's ± as llama-perplexity prints it: null where it printed nan (too few tokens for a spread). */
export interface FidelityUncertainty {
  meanKld: number | null;
  sameTopP: number | null;
  pplRatio: number | null;
  rmsDp: number | null;
}

/** What one run measured against the stock logits, as llama-perplexity printed it. */
export interface Fidelity {
  /** Mean KL divergence per token, in nats. */
  meanKld: number;
  /** The median and the 99th and 99.9th percentiles of the per-token KL divergence, and its maximum (null: the tool
   * printed no statistics section, which it prints from 100 scored tokens on). */
  medianKld: number | null;
  kld99: number | null;
  kld999: number | null;
  maxKld: number | null;
  /** How often the most likely token is the same, in percent. */
  sameTopP: number;
  /** PPL(patched) / PPL(stock). */
  pplRatio: number;
  /** The root mean square of the change in the probability of the text's own next token, in percent (RMS Δp). */
  rmsDp: number;
  uncertainty: FidelityUncertainty;
  /** How many chunks the tool scored (its last row's number). */
  chunks: number;
  /** Where the values come from: the statistics section, or (fewer than 100 scored tokens) the last chunk row. */
  from: 'statistics' | 'last-row';
}

/**
 * The tolerances a patched run must stay within to count as the same model. A profile changes which kernels run,
 * and one of them changes precision: with `has_simdgroup_mm` on, ggml-metal multiplies matrices of more than 8 rows in
 * `kernel_mul_mm`, which rounds both operands to half (11-bit significand) and accumulates in float, where the kernels
 * it replaces compute in float. That rounding moves the logits far less than 8-bit quantization does (llama.cpp's
 * published q8_0 against f16: mean KLD 0.001355, RMS Δp 1.2 %), so anything above these bounds is a kernel
 * computing something else. docs/bench.md gives the reasoning and the sources.
 */
export const FIDELITY_TOLERANCE = Object.freeze({
  /** Mean KLD at most this many nats. */
  meanKld: 0.001,
  /** Same top token at least this percentage. */
  sameTopP: 99,
  /** PPL(patched)/PPL(stock) within 1 ± this. */
  pplRatio: 0.01,
});

/**
 * How far below 0 a KL divergence printed by the tool may be and still be its own rounding: the stock logits are
 * saved as 16-bit steps over at most 16 nats of log-probability (`log_softmax` in perplexity.cpp), so each stored
 * log-probability is off by at most half a step, and a per-token KLD of the same model by about that much either way.
 * One whole step is allowed; a mean below it is not a KL divergence.
 */
export const KLD_ROUNDING = 16 / 65535;

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
/** `value ± uncertainty`, both captured. */
const VALUE_PM = String.raw`(${NUMBER})\s*±\s*(${NUMBER})`;
/** A chunk row: `%4d` then five `value ± uncertainty` columns, the last two in percent. */
const CHUNK_ROW = new RegExp(
  String.raw`^\s*(\d+)\s+${VALUE_PM}\s+${VALUE_PM}\s+${VALUE_PM}\s+${VALUE_PM}\s*%\s+${VALUE_PM}\s*%\s*$`,
);

type StatisticKey = 'meanKld' | 'maxKld' | 'kld999' | 'kld99' | 'medianKld' | 'pplRatio' | 'rmsDp' | 'sameTopP';

/** The statistics section's lines bench reads (kl_divergence() in perplexity.cpp), each with its label as printed. */
const STATISTICS: readonly { key: StatisticKey; label: string; line: RegExp }[] = (
  [
    ['meanKld', 'Mean KLD', String.raw`Mean\s+KLD`],
    ['maxKld', 'Maximum KLD', String.raw`Maximum\s+KLD`],
    ['kld999', '99.9% KLD', String.raw`99\.9%\s+KLD`],
    ['kld99', '99.0% KLD', String.raw`99\.0%\s+KLD`],
    ['medianKld', 'Median KLD', String.raw`Median\s+KLD`],
    ['pplRatio', 'Mean PPL(Q)/PPL(base)', String.raw`Mean PPL\(Q\)/PPL\(base\)`],
    ['rmsDp', 'RMS Δp', 'RMS Δp'],
    ['sameTopP', 'Same top p', 'Same top p'],
  ] as const
).map(([key, label, re]) => ({
  key,
  label,
  line: new RegExp(String.raw`^${re}\s*:\s*(${NUMBER})(?:\s*±\s*(${NUMBER}))?`),
}));

const finite = (text: string | undefined): number | null => {
  const n = Number(text);
  return text !== undefined && Number.isFinite(n) ? n : null;
};

const outputError = (message: string) => new BenchError('ERR_BENCH_OUTPUT', message);

/** What the text holds: the last chunk row, and each statistic read once (value and ±). */
interface Read {
  row: RegExpExecArray | null;
  stats: Partial<Record<StatisticKey, { value: number | null; pm: number | null }>>;
}

/**
 * One line into `read`. Two runs' output in one text is refused rather than one of them picked: a statistic printed
 * twice, a chunk row whose number does not grow, or a chunk row after the statistics.
 */
function readLine(line: string, read: Read): void {
  const r = CHUNK_ROW.exec(line);
  if (r !== null) {
    if (Object.keys(read.stats).length > 0)
      throw outputError(
        `llama-perplexity printed a chunk row after its statistics (two runs' output?): ${r[0].trim()}`,
      );
    if (read.row !== null && Number(r[1]) <= Number(read.row[1]))
      throw outputError(`llama-perplexity printed chunk ${r[1]} after chunk ${read.row[1]} (two runs' output?)`);
    read.row = r;
    return;
  }
  const trimmed = line.trim();
  for (const s of STATISTICS) {
    const m = s.line.exec(trimmed);
    if (m === null) continue;
    if (read.stats[s.key] !== undefined)
      throw outputError(`llama-perplexity printed "${s.label}" twice (two runs' output?): bench reads one run`);
    read.stats[s.key] = { value: finite(m[1]), pm: finite(m[2]) };
    return;
  }
}

/** The numbers refused as no measurement: a KL divergence below the tool's own rounding, a rate outside 0–100 %. */
function checkRange(f: Fidelity): void {
  for (const [label, v] of [
    ['mean KLD', f.meanKld],
    ['median KLD', f.medianKld],
    ['99.0% KLD', f.kld99],
    ['99.9% KLD', f.kld999],
    ['maximum KLD', f.maxKld],
  ] as const)
    if (v !== null && v < -KLD_ROUNDING)
      throw outputError(`llama-perplexity printed a ${label} of ${v}: a KL divergence is never negative`);
  if (f.sameTopP < 0 || f.sameTopP > 100)
    throw outputError(`llama-perplexity printed a same-top-token rate of ${f.sameTopP} %: a rate is from 0 to 100 %`);
  if (f.pplRatio <= 0) throw outputError(`llama-perplexity printed a PPL ratio of ${f.pplRatio}: a ratio is above 0`);
}

/**
 * The fidelity a `--kl-divergence` run printed: the statistics section's values and their ±, or, when the tool printed
 * none (fewer than 100 scored tokens), its last chunk row's. Throws BenchError ERR_BENCH_OUTPUT when there is no chunk
 * row (the tool could not read the logits, or the text was too short for one chunk), when a number the result needs is
 * nan, when the text holds two runs' output, and for a negative KL divergence or a rate above 100 %. Linear in the text.
 */
export function parseKlDivergence(text: string): Fidelity {
  const read: Read = { row: null, stats: {} };
  for (const line of text.split('\n')) readLine(line, read);
  const { row, stats } = read;
  if (row === null)
    throw outputError(
      'llama-perplexity printed no KL-divergence row: it could not read the stock logits, or the text is shorter than one chunk (2 × the context size in tokens)',
    );
  // Columns: 1 chunk, 2–3 PPL, 4–5 ln(PPL(Q)/PPL(base)), 6–7 KLD, 8–9 Δp RMS, 10–11 same top p (value, ±).
  const lnRatio = finite(row[4]);
  const rowKld = finite(row[6]);
  const rowDp = finite(row[8]);
  const rowTop = finite(row[10]);
  if (lnRatio === null || rowKld === null || rowDp === null || rowTop === null)
    throw outputError(`llama-perplexity's last KL-divergence row has no number: ${row[0].trim()}`);
  const lnPm = finite(row[5]);
  const fromRow = {
    meanKld: { value: rowKld, pm: finite(row[7]) },
    sameTopP: { value: rowTop, pm: finite(row[11]) },
    // As the tool derives it in its statistics: exp(ln ratio), ± ratio × the ln ratio's ±.
    pplRatio: { value: Math.exp(lnRatio), pm: lnPm === null ? null : Math.exp(lnRatio) * lnPm },
    rmsDp: { value: rowDp, pm: finite(row[9]) },
  };
  const pick = (key: keyof typeof fromRow) => {
    const s = stats[key];
    if (s === undefined) return fromRow[key];
    if (s.value === null) throw outputError(`llama-perplexity's statistics have no number for ${key}`);
    return { value: s.value, pm: s.pm };
  };
  const only = (key: StatisticKey) => stats[key]?.value ?? null;
  const meanKld = pick('meanKld');
  const sameTopP = pick('sameTopP');
  const pplRatio = pick('pplRatio');
  const rmsDp = pick('rmsDp');
  const f: Fidelity = {
    meanKld: meanKld.value,
    medianKld: only('medianKld'),
    kld99: only('kld99'),
    kld999: only('kld999'),
    maxKld: only('maxKld'),
    sameTopP: sameTopP.value,
    pplRatio: pplRatio.value,
    rmsDp: rmsDp.value,
    uncertainty: { meanKld: meanKld.pm, sameTopP: sameTopP.pm, pplRatio: pplRatio.pm, rmsDp: rmsDp.pm },
    chunks: Number(row[1]),
    from: Object.keys(stats).length > 0 ? 'statistics' : 'last-row',
  };
  checkRange(f);
  return f;
}

/** The logits file's header (`_logits_` and the context size): a file no longer than it holds no logits. */
export const LOGITS_HEADER_BYTES = 12;

/** What llama-perplexity says when the text has too few tokens for two contexts (its two lines, as printed). */
const TOO_SHORT = /you need at least \d+ tokens|tokenizes to only \d+ tokens/;

/** The prefix llama.cpp's log puts before a line (common/log.cpp): the time `M.ss.mmm.uuu` when on, then the level. */
const LOG_PREFIX = /^(?:\d+\.\d{2}\.\d{3}\.\d{3} )?[IWED] /;

/**
 * The tool's own words when the text was too short (`perplexity()` in perplexity.cpp: "you need at least N tokens to
 * evaluate perplexity with a context of C" and "the data file you provided tokenizes to only M tokens"), without the
 * log's time and level, control characters escaped, each line clipped; null when it said no such thing. Linear in the
 * text.
 */
export function tooShortMessage(output: string): string | null {
  const said = output
    .split('\n')
    .filter((line) => TOO_SHORT.test(line))
    .slice(0, 2)
    .map((line) => clip(escapeControl(line.trim().replace(LOG_PREFIX, '')), 200));
  return said.length === 0 ? null : said.join('; ');
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
