import type { BenchResult } from '../bench/run.js';
import { inert } from '../core/escape.js';
import { plural } from '../core/words.js';
import type { SpeedupEstimate } from '../bench/stats.js';
import { FIDELITY_TOLERANCE } from '../bench/perplexity.js';
import { marginOf, type ChildResult, type GreedyStep } from '../bench/node-llama-cpp.js';
import { median } from '../bench/stats.js';
import { recordedBuildName } from '../engines/llama-cpp-releases.js';
import type { Styler } from './text.js';

const ts = (n: number | null) => (n !== null && Number.isFinite(n) ? n.toFixed(2) : '–');
/** A statistic with its ± as llama-perplexity prints it (`0.000412 ± 0.000010`); the ± left out where there is none. */
const pm = (value: number, plusMinus: number | null | undefined, digits: number) =>
  plusMinus === null || plusMinus === undefined
    ? value.toFixed(digits)
    : `${value.toFixed(digits)} ± ${plusMinus.toFixed(digits)}`;
const opt = (value: number | null | undefined, digits: number) =>
  value === null || value === undefined ? '–' : value.toFixed(digits);
const times = (n: number | null) => (n !== null && Number.isFinite(n) ? `${n.toFixed(2)}x` : '–');

/** Tokens per second with the tool's own ± when it printed one. */
const tsCell = (side: { ts: number | null; stddevTs: number | null }) =>
  side.stddevTs === null ? ts(side.ts) : `${ts(side.ts)} ± ${side.stddevTs.toFixed(2)}`;

/** What a speed-up's interval says, in words. */
export const VERDICT_WORDS: Readonly<Record<SpeedupEstimate['verdict'], string>> = {
  faster: 'faster',
  slower: 'slower',
  'no-difference-shown': 'no difference shown',
  'no-interval': 'no interval (one round)',
};

/** A speed-up as a cell: the centre and its 95 % interval, or the centre alone, said so, without one. */
export function speedupCell(e: SpeedupEstimate): string {
  if (e.centre === null) return '–';
  if (e.low === null || e.high === null) return `${times(e.centre)} (no interval)`;
  return `${times(e.centre)} [${times(e.low)}, ${times(e.high)}]`;
}

/**
 * The result's first line after the title: what it is worth. Refused (a patched side not patched), partial (and why),
 * a backend no profile can change, then where it was measured and how the rounds ended.
 */
export function benchHeadline(r: BenchResult): string {
  const where =
    r.provenance === 'simulated'
      ? 'simulated Metal (Linux test build: no GPU ran, so the numbers say nothing about a Mac)'
      : 'measured on macOS';
  const parts = [
    r.validity.valid ? null : `NOT A COMPARISON: a patched side was not patched (${r.validity.reason})`,
    r.partial ? `PARTIAL: ${r.stop.detail}` : null,
    r.validity.affected === false
      ? `the tool ran on ${r.validity.backends.join(', ') || 'the CPU'}, which no profile can change: any speed-up is noise`
      : null,
    `${where}; ${r.partial ? plural(r.rounds, 'complete round', 'complete rounds') : r.stop.detail}`,
  ];
  return parts.filter((p): p is string => p !== null).join('; ');
}
/** A greedy step as a cell: the token's text (JSON-quoted: it may be a space or a byte), id, probability, margin. */
const step = (g: GreedyStep) =>
  `${JSON.stringify(g.text)} (${g.token}) p ${g.probability.toFixed(4)}, margin ${marginOf(g).toFixed(4)}`;

/**
 * node-llama-cpp: each side's warm-up seconds (the pipeline compile cost, timed apart from the tests), the median over
 * its rounds; null for other modes and for results written before runs were warmed up.
 */
function warmupLine(r: BenchResult): string | null {
  if (r.mode !== 'node-llama-cpp') return null;
  const sides = ['stock', ...r.profiles.map((p) => p.name)];
  const cells = sides.flatMap((side) => {
    const seconds = r.records
      .filter((x) => x.side === side)
      .map((x) => (x.records[0] as Partial<ChildResult> | undefined)?.warmup?.seconds)
      .filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
    return seconds.length === 0 ? [] : [`${side} ${median(seconds).toFixed(2)} s`];
  });
  return cells.length === 0 ? null : `Warm-up (pipeline compile) per side: ${cells.join(', ')} (medians over rounds).`;
}

/** A Markdown table: header, rule, rows. Cells never hold a `|` or a line break. */
function table(head: string[], rows: string[][]): string[] {
  const cell = (s: string) => s.replace(/[|\r\n]/g, ' ');
  return [
    `| ${head.map(cell).join(' | ')} |`,
    `|${head.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.map(cell).join(' | ')} |`),
  ];
}

/**
 * The result as a person reads it: for speed, one row per llama-bench test (stock t/s, each profile's t/s and
 * speed-up with its spread over the rounds, Cua's table); for fidelity, one row per profile with its verdict.
 */
export function formatBench(result: BenchResult, s: Styler): string {
  // Every string in it came from a file, a tool's output or another user: shown, a control character only shows.
  const r = inert(result);
  const headline = benchHeadline(r);
  const bad = !r.validity.valid || r.partial;
  const lines = [`${s.bold('metal-cap-shim bench')}: ${bad ? s.bad(headline) : headline}`];
  const applied = r.profiles.map((p) => p.name).join(', ') || 'none';
  lines.push(`Command: ${r.command.join(' ')}`, `Profiles: ${applied}; rounds: ${r.rounds}`);
  if (r.speed !== null) {
    const first = r.speed[0];
    if (first !== undefined)
      lines.push(
        `Model: ${first.model ?? first.modelType ?? 'unknown'}; build: ${first.build === null ? 'unknown' : recordedBuildName(first.build)}; backend: ${first.backend ?? 'unknown'}`,
      );
    const names = r.profiles.map((p) => p.name);
    const head = [
      'test',
      'stock t/s',
      ...names.flatMap((n) => [`${n} t/s`, `${n} speed-up [${r.interval.confidence * 100} % interval]`, `${n}`]),
    ];
    const rows = r.speed.map((row) => [
      row.label,
      tsCell(row.stock),
      ...row.profiles.flatMap((p) => [tsCell(p), speedupCell(p.speedup), VERDICT_WORDS[p.speedup.verdict]]),
    ]);
    lines.push('', ...table(head, rows));
    if (r.speed.length > 0)
      lines.push(
        '',
        `t/s: geometric mean over the rounds, ± the tool's own standard deviation (root mean square over the rounds). Speed-up: geometric mean of each round's ratio to stock's run of the same round, with its ${r.interval.confidence * 100} % interval (${r.interval.method}, ${plural(r.rounds, 'round', 'rounds')}); "no difference shown" when the interval holds 1x.`,
      );
    const warmups = warmupLine(r);
    if (warmups !== null) lines.push('', warmups);
  }
  if (r.fidelity !== null) {
    const t = FIDELITY_TOLERANCE;
    const control = r.control ?? null;
    // A result attached to a report may predate the ± and RMS Δp: those cells then read –.
    const rows = [...(control === null ? [] : [control]), ...r.fidelity].map((f) => [
      f.name,
      pm(f.meanKld, f.uncertainty?.meanKld, 6),
      opt(f.medianKld, 6),
      opt(f.kld99, 6),
      opt(f.kld999, 6),
      `${pm(f.sameTopP, f.uncertainty?.sameTopP, 3)} %`,
      pm(f.pplRatio, f.uncertainty?.pplRatio, 6),
      f.rmsDp === undefined ? '–' : `${pm(f.rmsDp, f.uncertainty?.rmsDp, 3)} %`,
      f.verdict === 'within-tolerance' ? s.good('within tolerance') : s.bad(`differs: ${f.reasons.join('; ')}`),
    ]);
    const head = ['profile', 'mean KLD', 'median KLD', '99 % KLD', '99.9 % KLD', 'same top p', 'PPL ratio', 'RMS Δp'];
    lines.push(
      '',
      ...table([...head, 'verdict'], rows),
      '',
      `Tolerance: mean KLD ≤ ${t.meanKld}, same top token ≥ ${t.sameTopP} %, PPL ratio within 1 ± ${t.pplRatio}; ± as llama-perplexity prints it.`,
    );
    if (control?.verdict === 'differs')
      lines.push(
        s.warn(
          'The control (stock against its own logits) differs: the tool does not repeat itself on this machine, so a profile cannot be told from that noise.',
        ),
      );
  }
  if (r.greedy !== undefined && r.greedy !== null) {
    const g = r.greedy;
    const rows = g.profiles.map((p) =>
      p.divergence === null
        ? [p.name, `all ${p.tokens} the same`, '–', '–']
        : [p.name, `token ${p.divergence.index} of ${p.tokens}`, step(p.divergence.stock), step(p.divergence.patched)],
    );
    lines.push(
      '',
      `Greedy generation after ${JSON.stringify(g.prompt)}, ${g.stock.length} tokens, each profile against stock:`,
      '',
      ...table(['profile', 'first divergence', 'stock chose', 'patched chose'], rows),
    );
  }
  const unloaded = r.runs.filter((x) => x.side !== 'stock' && !x.injectorLoaded).map((x) => x.side);
  if (unloaded.length > 0)
    lines.push(
      '',
      s.warn(
        `${r.mode === 'node-llama-cpp' ? 'The profile was not applied before getLlama() for' : 'The shim did not load into the tool for'}: ${[...new Set(unloaded)].join(', ')}`,
      ),
    );
  if (r.failure !== null)
    lines.push(
      '',
      s.warn(
        `Failed run: ${r.failure.side}, round ${r.failure.round} (${r.failure.signal !== null ? `killed by ${r.failure.signal}` : `exit ${r.failure.exitCode}`}): ${r.failure.message}`,
      ),
    );
  if (r.partial) lines.push('', s.warn(`Partial: ${r.stop.detail}. The table holds the rounds that finished.`));
  return lines.join('\n');
}
