import type { Matrix } from '../audit/field-report.js';

/** Text as SVG character data or an attribute value: the five XML specials escaped, control characters dropped. */
function xml(text: string): string {
  return text
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

const LABEL = 430;
const BARS = 420;
const ROW = 22;
const TOP = 56;

/**
 * The matrix's bench speed-ups as a horizontal bar chart a person reads at a glance: one bar per host and guest OS,
 * profile and llama-bench test, its length the median speed-up, a line at 1x (stock), the builds that measured it
 * in its label. Null when no row has a speed result.
 */
export function matrixSvg(m: Matrix): string | null {
  const bars = m.rows.flatMap((r) =>
    (r.bench?.speed ?? []).flatMap((e) => e.speedup === null ? [] : [{
      label: `${r.host} · ${r.guestOs} — ${e.profile} ${e.test}`,
      speedup: e.speedup,
      note: `${e.speedup.toFixed(2)}x${e.builds.length > 0 ? ` (${e.builds.map((b) => b.split(' ')[0]).join(', ')})` : ''}${e.reports > 1 ? `, ${e.reports} reports` : ''}`,
    }]),
  );
  if (bars.length === 0) return null;
  const top = Math.max(2, ...bars.map((b) => b.speedup)) * 1.1;
  const x = (v: number) => LABEL + (Math.max(0, v) / top) * BARS;
  const width = LABEL + BARS + 150;
  const height = TOP + bars.length * ROW + 30;
  const ticks = Array.from({ length: Math.floor(top) + 1 }, (_, i) => i);
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="10" y="22" font-size="15" font-weight="bold">${xml('metal-cap-shim bench: speed-up over stock (stock = 1x)')}</text>`,
    ...ticks.map(
      (t) =>
        `<line x1="${x(t).toFixed(1)}" y1="${TOP - 8}" x2="${x(t).toFixed(1)}" y2="${TOP + bars.length * ROW}" stroke="${t === 1 ? '#333333' : '#dddddd'}"${t === 1 ? ' stroke-dasharray="4 3"' : ''}/>` +
        `<text x="${x(t).toFixed(1)}" y="${TOP - 12}" text-anchor="middle" fill="#555555">${t}x</text>`,
    ),
    ...bars.map((b, i) => {
      const y = TOP + i * ROW;
      const w = (x(b.speedup) - LABEL).toFixed(1);
      const fill = b.speedup >= 1 ? '#2e7d32' : '#c62828';
      return [
        `<text x="${LABEL - 8}" y="${y + 15}" text-anchor="end">${xml(b.label)}</text>`,
        `<rect x="${LABEL}" y="${y + 4}" width="${w}" height="${ROW - 8}" fill="${fill}"/>`,
        `<text x="${(x(b.speedup) + 6).toFixed(1)}" y="${y + 15}">${xml(b.note)}</text>`,
      ].join('');
    }),
    '</svg>',
    '',
  ].join('\n');
}
