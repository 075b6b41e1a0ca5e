import { speedMarkers, type Matrix } from '../audit/field-report.js';
import { InvalidReportError } from '../core/errors.js';
import { escapeControl, xmlSpecials } from '../core/escape.js';

/** One bar of the speed-up chart: a profile against stock on one host, one test row. */
export interface ChartBar {
  /** Who measured: host · guest OS (long, from other people: escaped and wrapped here). */
  group: string;
  /** The profile and the test row's label, e.g. "apple9 · pp512 fa=1 tiny.gguf". */
  label: string;
  /** Speed-up centre and its 95 % interval (null bounds: no interval, e.g. one round). */
  centre: number;
  low: number | null;
  high: number | null;
  verdict: 'faster' | 'slower' | 'no-difference-shown' | 'no-interval';
  /** A short provenance marker shown after the value: '' for measured on macOS, 'simulated', 'partial', … */
  marker: string;
  /** Extra note, e.g. the llama.cpp builds and report count. */
  note: string;
}

// The font the chart declares, and its advance widths: DejaVu Sans, the larger of Book and Bold per character, in
// thousandths of an em rounded up (read from the fonts' hmtx tables, 2048 units per em). A viewer without DejaVu Sans
// falls back to a sans-serif, which is narrower (Helvetica, Arial, Liberation Sans), so the measure stays an upper bound.
const FONT_FAMILY = 'DejaVu Sans, sans-serif';
// U+0020 to U+007E.
const ASCII_ADVANCE = [
  349, 457, 521, 838, 696, 1002, 873, 307, 458, 458, 523, 838, 380, 416, 380, 366, 696, 696, 696, 696, 696, 696, 696,
  696, 696, 696, 400, 400, 838, 838, 838, 581, 1000, 774, 763, 734, 831, 684, 684, 821, 837, 373, 373, 775, 638, 996,
  837, 851, 733, 851, 771, 721, 683, 813, 774, 1104, 771, 725, 726, 458, 366, 458, 838, 500, 500, 675, 716, 593, 716,
  679, 436, 716, 712, 343, 343, 666, 343, 1042, 712, 688, 716, 716, 494, 596, 479, 712, 652, 924, 646, 652, 583, 712,
  366, 712, 838,
];
// U+00A0 to U+00FF.
const LATIN1_ADVANCE = [
  349, 457, 696, 696, 637, 696, 366, 500, 500, 1000, 564, 646, 838, 416, 1000, 500, 500, 838, 438, 438, 500, 736, 637,
  380, 500, 438, 564, 646, 1036, 1036, 1036, 581, 774, 774, 774, 774, 774, 774, 1085, 734, 684, 684, 684, 684, 373, 373,
  373, 373, 838, 837, 851, 851, 851, 851, 851, 838, 851, 813, 813, 813, 813, 725, 738, 720, 675, 675, 675, 675, 675,
  675, 1048, 593, 679, 679, 679, 679, 343, 343, 343, 343, 688, 712, 688, 688, 688, 688, 688, 838, 688, 712, 712, 712,
  712, 652, 716, 652,
];
// The characters the chart writes itself beyond Latin-1: –, —, …, ≥, and U+FFFD for what the escaper replaces.
const OTHER_ADVANCE: Record<number, number> = { 8211: 500, 8212: 1000, 8230: 1000, 8805: 838, 65533: 1114 };
// Anything else: wider than an em, which CJK fallback fonts and nearly all of DejaVu's other glyphs stay within; the
// rare wider glyph is held inside its column by the column's clip path.
const UNKNOWN_ADVANCE = 1250;

/** The advance of code point `cp` in thousandths of an em (an upper bound for the declared font). */
function advance(cp: number): number {
  if (cp >= 0x20 && cp <= 0x7e) return ASCII_ADVANCE[cp - 0x20]!;
  if (cp >= 0xa0 && cp <= 0xff) return LATIN1_ADVANCE[cp - 0xa0]!;
  return OTHER_ADVANCE[cp] ?? UNKNOWN_ADVANCE;
}

/**
 * The width in pixels of character `c` at `size` pixels: rounded up to a whole pixel, since a renderer that hints
 * (librsvg through Pango, at the size it draws) rounds each advance to a whole pixel, up as often as down.
 */
function charWidth(c: string, size: number): number {
  return Math.ceil((advance(c.codePointAt(0)!) * size) / 1000);
}

/** The width in pixels of `text` (already made safe) at `size` pixels: an upper bound for the declared font. */
export function textWidth(text: string, size: number): number {
  let width = 0;
  for (const c of text) width += charWidth(c, size);
  return width;
}

// Line breaks and tabs become spaces (a label is laid out in lines of its own); every other character a viewer would act
// on rather than show, or that XML 1.0 cannot hold (controls, C1, bidi and other format characters, lone surrogates,
// non-characters), is shown as its escape by the one escaper every output uses (lib/core/escape.ts).
const BREAKS = /[\t\n\r\u2028\u2029]/g;

/** `text` as the chart shows it (see above); still to be XML-escaped (xml). */
export function showable(text: string): string {
  return escapeControl(text.replace(BREAKS, ' '));
}

/** Showable text as SVG character data or an attribute value: the five XML specials escaped. */
const xml = xmlSpecials;

/**
 * `text` (showable) broken into lines no wider than `width` pixels at `size`: at spaces where it can, inside a word
 * where a word alone is too wide. More than `maxLines` lines: the last one ends with … . Linear in the text.
 */
export function wrapText(text: string, width: number, size: number, maxLines: number): string[] {
  const chars = Array.from(text.trim());
  const px = chars.map((c) => charWidth(c, size));
  const lines: string[] = [];
  let start = 0;
  while (start < chars.length && lines.length < maxLines) {
    let end = start;
    let used = 0;
    let lastSpace = -1;
    while (end < chars.length && used + px[end]! <= width) {
      if (chars[end] === ' ') lastSpace = end;
      used += px[end]!;
      end++;
    }
    if (end < chars.length && chars[end] !== ' ' && lastSpace > start) end = lastSpace;
    // A line holds at least one character, whatever its width: never an endless loop.
    if (end === start) end = start + 1;
    lines.push(chars.slice(start, end).join('').trimEnd());
    start = end;
    while (chars[start] === ' ') start++;
  }
  if (start < chars.length) lines[lines.length - 1] = withEllipsis(lines[lines.length - 1]!, width, size);
  return lines;
}

/** `line` shortened from its end until it and … fit in `width`. */
function withEllipsis(line: string, width: number, size: number): string {
  const chars = Array.from(line);
  let used = textWidth(line, size) + textWidth('…', size);
  while (chars.length > 0 && used > width) used -= charWidth(chars.pop()!, size);
  return `${chars.join('').trimEnd()}…`;
}

// The value axis is logarithmic and held to [1/1000, 1000]: a value beyond is drawn at the edge, its number printed.
export const AXIS_LIMITS = { min: 1e-3, max: 1e3 } as const;
const NICE_MANTISSAS = [1, 2, 5];

/** m·10^e as the double nearest it (a quotient below 1), so a tick prints as 0.005x, never as a neighbour of it. */
function nice(m: number, e: number): number {
  return e >= 0 ? m * 10 ** e : m / 10 ** -e;
}

/** The 1–2–5 values from the largest at or below `lo` to the smallest at or above `hi`. */
function niceValues(lo: number, hi: number): number[] {
  const values: number[] = [];
  for (let e = Math.floor(Math.log10(lo)) - 1; e <= Math.ceil(Math.log10(hi)); e++)
    for (const m of NICE_MANTISSAS) values.push(nice(m, e));
  let first = values.length - 1;
  while (first > 0 && values[first]! > lo * (1 + 1e-9)) first--;
  const last = values.findIndex((v) => v >= hi * (1 - 1e-9));
  return values.slice(first, last + 1);
}

/**
 * The axis for values in [lo, hi] (clamped to AXIS_LIMITS, 1 always included): its ends and ticks. Ticks are the
 * 1–2–5 values when they span at most two decades, else the powers of ten: never more than seven.
 */
export function logAxis(lo: number, hi: number): { min: number; max: number; ticks: number[] } {
  const a = Math.min(1, Math.max(AXIS_LIMITS.min, lo));
  const b = Math.max(1, Math.min(AXIS_LIMITS.max, hi));
  let ticks = niceValues(a, b);
  // One decade at least, so a chart of speed-ups near 1x still has an axis to read.
  if (ticks.length < 3) ticks = niceValues(a / 2, b * 2);
  if (Math.log10(ticks[ticks.length - 1]! / ticks[0]!) > 2 + 1e-9) {
    ticks = [];
    for (let e = Math.floor(Math.log10(a) + 1e-9); e <= Math.ceil(Math.log10(b) - 1e-9); e++) ticks.push(nice(1, e));
  }
  return { min: ticks[0]!, max: ticks[ticks.length - 1]!, ticks };
}

/** A speed-up as printed: two decimals, or the exponent form far from 1x (so 1e308 prints short). */
export function formatSpeedup(v: number): string {
  return v >= 1000 || v < 0.01 ? `${v.toExponential(1)}x` : `${v.toFixed(2)}x`;
}

const VERDICTS: readonly ChartBar['verdict'][] = ['faster', 'slower', 'no-difference-shown', 'no-interval'];
const FILL: Record<ChartBar['verdict'], string> = {
  faster: '#2e7d32',
  slower: '#c62828',
  'no-difference-shown': '#9e9e9e',
  'no-interval': '#9e9e9e',
};

/** Throws InvalidReportError naming the bar and field when a value cannot be drawn (not finite, not above 0). */
function checkBar(b: ChartBar, i: number): void {
  const positive = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v > 0;
  const fail = (field: string, what: string): never => {
    throw new InvalidReportError(`bars[${i}].${field}`, `chart bar ${i + 1}: ${what}`);
  };
  if (!positive(b.centre)) fail('centre', 'the speed-up must be a finite number above 0');
  if ((b.low === null) !== (b.high === null)) fail('low', 'an interval needs both bounds, or neither');
  if (b.low !== null && (!positive(b.low) || !positive(b.high) || b.low > b.centre || b.high! < b.centre))
    fail('low', 'the interval must be finite, above 0, and hold the speed-up');
  if (!VERDICTS.includes(b.verdict)) fail('verdict', `the verdict must be one of ${VERDICTS.join(', ')}`);
}

const SIZE = 12;
const LINE = 15;
const PAD = 4;
const MARGIN = 12;
const GAP = 12;
const PLOT_WIDTH = 420;
const LABEL_WIDTH = { min: 120, max: 320 };
const VALUE_WIDTH = { min: 140, max: 300 };
const MAX_LINES = { label: 3, note: 2, heading: 2 };
const TITLE = 'metal-cap-shim bench: speed-up over stock (log scale, stock = 1x)';
const TITLE_SIZE = 15;
const LEGEND: { verdict: ChartBar['verdict']; text: string }[] = [
  { verdict: 'faster', text: 'faster (95 % interval above 1x)' },
  { verdict: 'slower', text: 'slower (interval below 1x)' },
  { verdict: 'no-difference-shown', text: 'no difference shown, or no interval; whiskers: the 95 % interval' },
];
const LEGEND_SIZE = 11;
const SWATCH = 10;

/** The largest of `floor` and `of` each item: a loop, not Math.max(...items), which a long list overflows. */
function largest<T>(items: readonly T[], floor: number, of: (item: T) => number): number {
  let most = floor;
  for (const item of items) most = Math.max(most, of(item));
  return most;
}

/** Pixels with one decimal. */
const n = (v: number) => v.toFixed(1);

/** `<text>` of `lines` from baseline `y`, its `<title>` the whole text. */
function textBlock(x: number, y: number, lines: string[], whole: string, attrs = ''): string {
  const spans = lines.map((l, i) => `<tspan x="${n(x)}" y="${n(y + i * LINE)}">${xml(l)}</tspan>`).join('');
  return `<text${attrs}><title>${xml(whole)}</title>${spans}</text>`;
}

/**
 * The speed-ups as a horizontal bar chart a person reads at a glance: a heading per group (host · guest OS), then one
 * row per bar: its label (wrapped to a column sized to the longest label, at most 320 px), the bar from 1x to the
 * speed-up on a log axis with its 95 % interval as whiskers (green faster, red slower, grey no difference shown or no
 * interval), and its value, marker and note. Every text is measured in the declared font and kept in its column; its
 * whole text is its tooltip. Null when there is nothing to draw. Throws InvalidReportError for a value it cannot draw.
 */
export function speedupChart(bars: readonly ChartBar[]): string | null {
  if (bars.length === 0) return null;
  bars.forEach(checkBar);
  const rows = bars.map((b) => {
    const group = showable(b.group);
    const label = showable(b.label);
    const interval = b.low === null ? 'no interval' : `${formatSpeedup(b.low)}–${formatSpeedup(b.high!)}`;
    const marker = showable(b.marker);
    const value = `${formatSpeedup(b.centre)} (${interval})${marker === '' ? '' : ` ${marker}`}`;
    return { bar: b, group, label, value, note: showable(b.note) };
  });
  const labelWidth = Math.ceil(
    Math.min(
      LABEL_WIDTH.max,
      largest(rows, LABEL_WIDTH.min, (r) => textWidth(r.label, SIZE)),
    ),
  );
  const valueWidth = Math.ceil(
    Math.min(
      VALUE_WIDTH.max,
      largest(rows, VALUE_WIDTH.min, (r) => Math.max(textWidth(r.value, SIZE), textWidth(r.note, SIZE))),
    ),
  );
  const plotX = MARGIN + labelWidth + GAP;
  const valueX = plotX + PLOT_WIDTH + GAP;
  const legendWidth = LEGEND.reduce((w, l) => w + SWATCH + 4 + textWidth(l.text, LEGEND_SIZE) + 14, 0);
  const width = Math.ceil(
    Math.max(valueX + valueWidth + MARGIN, 2 * MARGIN + textWidth(TITLE, TITLE_SIZE), 2 * MARGIN + legendWidth),
  );

  const axis = logAxis(
    -largest(bars, -1, (b) => -(b.low ?? b.centre)),
    largest(bars, 1, (b) => b.high ?? b.centre),
  );
  const span = Math.log(axis.max / axis.min);
  const x = (v: number) => plotX + (Math.log(Math.min(axis.max, Math.max(axis.min, v)) / axis.min) / span) * PLOT_WIDTH;

  const top = 84;
  let y = top;
  let lastGroup: string | null = null;
  const headings: string[] = [];
  const labels: string[] = [];
  const plot: string[] = [];
  const values: string[] = [];
  for (const r of rows) {
    if (r.group !== lastGroup) {
      lastGroup = r.group;
      const lines = wrapText(r.group, width - 2 * MARGIN, SIZE, MAX_LINES.heading);
      headings.push(textBlock(MARGIN, y + PAD + 11, lines, r.group, ' font-weight="bold"'));
      y += lines.length * LINE + 2 * PAD;
    }
    const labelLines = wrapText(r.label, labelWidth, SIZE, MAX_LINES.label);
    const noteLines = r.note === '' ? [] : wrapText(r.note, valueWidth, SIZE, MAX_LINES.note);
    const valueLines = [...wrapText(r.value, valueWidth, SIZE, 1), ...noteLines];
    const height = Math.max(labelLines.length, valueLines.length) * LINE + 2 * PAD;
    labels.push(textBlock(MARGIN, y + PAD + 11, labelLines, r.label));
    values.push(textBlock(valueX, y + PAD + 11, valueLines, [r.value, r.note].filter((t) => t !== '').join(' · ')));
    const mid = y + height / 2;
    const [a, c] = [x(1), x(r.bar.centre)];
    plot.push(
      `<rect x="${n(Math.min(a, c))}" y="${n(mid - 5)}" width="${n(Math.abs(c - a))}" height="10" fill="${FILL[r.bar.verdict]}"/>`,
    );
    if (r.bar.low !== null) {
      const [lo, hi] = [x(r.bar.low), x(r.bar.high!)];
      plot.push(
        `<path d="M${n(lo)} ${n(mid)}H${n(hi)}M${n(lo)} ${n(mid - 5)}V${n(mid + 5)}M${n(hi)} ${n(mid - 5)}V${n(mid + 5)}" stroke="#212121" stroke-width="1.5" fill="none"/>`,
      );
    }
    y += height;
  }
  const bottom = y;
  const height = bottom + MARGIN;

  const ticks = axis.ticks.map((t) => {
    const tx = n(x(t));
    const line = `<line x1="${tx}" y1="${top - 6}" x2="${tx}" y2="${bottom}" stroke="${t === 1 ? '#333333' : '#dddddd'}"${t === 1 ? ' stroke-dasharray="4 3"' : ''}/>`;
    return { line, text: `<text x="${tx}" y="${top - 10}" text-anchor="middle" fill="#555555">${xml(`${t}x`)}</text>` };
  });
  let legendX = MARGIN;
  const legend = LEGEND.map((l) => {
    const item = `<rect x="${n(legendX)}" y="39" width="${SWATCH}" height="${SWATCH}" fill="${FILL[l.verdict]}"/><text x="${n(legendX + SWATCH + 4)}" y="48" font-size="${LEGEND_SIZE}">${xml(l.text)}</text>`;
    legendX += SWATCH + 4 + textWidth(l.text, LEGEND_SIZE) + 14;
    return item;
  });
  const clip = (id: string, cx: number, cw: number) =>
    `<clipPath id="${id}"><rect x="${n(cx)}" y="0" width="${n(cw)}" height="${height}"/></clipPath>`;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="${FONT_FAMILY}" font-size="${SIZE}">`,
    `<defs>${clip('clip-labels', MARGIN, labelWidth)}${clip('clip-values', valueX, valueWidth)}${clip('clip-page', MARGIN, width - 2 * MARGIN)}</defs>`,
    `<rect id="background" width="${width}" height="${height}" fill="#ffffff"/>`,
    `<g id="title"><text x="${MARGIN}" y="26" font-size="${TITLE_SIZE}" font-weight="bold">${xml(TITLE)}</text></g>`,
    `<g id="legend">${legend.join('')}</g>`,
    `<g id="plot">${ticks.map((t) => t.line).join('')}`,
    ...plot,
    '</g>',
    `<g id="axis">${ticks.map((t) => t.text).join('')}</g>`,
    `<g id="headings" clip-path="url(#clip-page)">`,
    ...headings,
    '</g>',
    `<g id="labels" clip-path="url(#clip-labels)">`,
    ...labels,
    '</g>',
    `<g id="values" clip-path="url(#clip-values)">`,
    ...values,
    '</g>',
    '</svg>',
    '',
  ].join('\n');
}

/** The matrix's bench speed-ups as chart bars: today's matrix has one median per cell, so no interval. */
export function matrixSvg(m: Matrix): string | null {
  return speedupChart(
    m.rows.flatMap((r) =>
      // An entry with no paired round has no speed-up to draw.
      (r.bench?.speed ?? []).flatMap((e) =>
        e.speedup === null
          ? []
          : [
              {
                group: `${r.host} · ${r.guestOs}`,
                label: `${e.profile} · ${e.test}`,
                centre: e.speedup,
                low: e.low,
                high: e.high,
                verdict: e.verdict,
                marker: speedMarkers(e).join(', '),
                note: [
                  e.builds.length > 0 ? e.builds.map((b) => b.split(' ')[0]).join(', ') : '',
                  e.reports > 1 ? `${e.reports} reports` : '',
                ]
                  .filter((t) => t !== '')
                  .join(', '),
              },
            ],
      ),
    ),
  );
}
