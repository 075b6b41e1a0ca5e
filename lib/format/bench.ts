import type { BenchResult } from '../bench/run.js';
import { FIDELITY_TOLERANCE } from '../bench/perplexity.js';
import { marginOf, type GreedyStep } from '../bench/node-llama-cpp.js';
import type { Styler } from './text.js';

const ts = (n: number) => (Number.isFinite(n) ? n.toFixed(2) : '–');
const times = (n: number | null) => (n !== null && Number.isFinite(n) ? `${n.toFixed(2)}x` : '–');
/** A greedy step as a cell: the token's text (JSON-quoted: it may be a space or a byte), id, probability, margin. */
const step = (g: GreedyStep) =>
  `${JSON.stringify(g.text)} (${g.token}) p ${g.probability.toFixed(4)}, margin ${marginOf(g).toFixed(4)}`;

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
export function formatBench(r: BenchResult, s: Styler): string {
  const lines = [s.bold('metal-cap-shim bench')];
  const applied = r.profiles.map((p) => p.name).join(', ') || 'none';
  lines.push(`Command: ${r.command.join(' ')}`, `Profiles: ${applied}; rounds: ${r.rounds}`);
  if (r.speed !== null) {
    const first = r.speed[0];
    if (first !== undefined)
      lines.push(
        `Model: ${first.model ?? first.modelType ?? 'unknown'}; build: ${first.build ?? 'unknown'}; backend: ${first.backend ?? 'unknown'}`,
      );
    const names = r.profiles.map((p) => p.name);
    const head = ['test', 'stock t/s', ...names.flatMap((n) => [`${n} t/s`, `${n} speed-up (min–max)`])];
    const rows = r.speed.map((row) => [
      row.test,
      ts(row.stock.ts),
      ...row.profiles.flatMap((p) => [ts(p.ts), `${times(p.speedup)} (${times(p.spread.min)}–${times(p.spread.max)})`]),
    ]);
    lines.push('', ...table(head, rows));
  }
  if (r.fidelity !== null) {
    const t = FIDELITY_TOLERANCE;
    const rows = r.fidelity.map((f) => [
      f.name,
      f.meanKld.toFixed(6),
      f.kld99 === null ? '–' : f.kld99.toFixed(6),
      `${f.sameTopP.toFixed(3)} %`,
      f.pplRatio.toFixed(4),
      f.verdict === 'within-tolerance' ? s.good('within tolerance') : s.bad(`differs: ${f.reasons.join('; ')}`),
    ]);
    lines.push(
      '',
      ...table(['profile', 'mean KLD', '99 % KLD', 'same top p', 'PPL ratio', 'verdict'], rows),
      '',
      `Tolerance: mean KLD ≤ ${t.meanKld}, same top token ≥ ${t.sameTopP} %, PPL ratio within 1 ± ${t.pplRatio}.`,
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
  if (r.interrupted) lines.push('', s.warn('Interrupted: the table holds the runs that finished.'));
  return lines.join('\n');
}
