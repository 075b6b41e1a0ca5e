// The speed-up chart: its layout from the rules it states, hostile values and text, its size, and how it renders
// (rsvg-convert, from Debian's librsvg2-bin): every label inside the picture and out of the bars' area.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PNG } from 'pngjs';
import { describe, expect, it } from 'vitest';
import { escapeControl } from '../../lib/core/escape.js';
import { InvalidReportError } from '../../lib/core/errors.js';
import {
  AXIS_LIMITS,
  type ChartBar,
  formatSpeedup,
  logAxis,
  showable,
  speedupChart,
  textWidth,
  wrapText,
} from '../../lib/format/svg.js';
import { runCli, thrown } from '../support/helpers.js';

const dir = mkdtempSync(path.join(tmpdir(), 'mcs-svg-'));

const bar = (over: Partial<ChartBar> = {}): ChartBar => ({
  group: 'Apple M1 Ultra · macOS 26.5.2',
  label: 'host-family · pp512',
  centre: 2,
  low: 1.5,
  high: 2.5,
  verdict: 'faster',
  marker: '',
  note: 'b7010',
  ...over,
});

/** The attribute values of every element `tag` inside the group `id`. */
function elements(svg: string, id: string, tag: string): Record<string, string>[] {
  const group = new RegExp(`<g id="${id}"[^>]*>([\\s\\S]*?)</g>`).exec(svg)![1]!;
  return [...group.matchAll(new RegExp(`<${tag} ([^>]*?)/?>`, 'g'))].map((m) =>
    Object.fromEntries([...m[1]!.matchAll(/([\w-]+)="([^"]*)"/g)].map((a) => [a[1]!, a[2]!])),
  );
}

/** The text of every `<tspan>` (the lines drawn) and every `<title>` (the tooltips) inside the group `id`. */
function texts(svg: string, id: string): { lines: string[]; titles: string[] } {
  const group = new RegExp(`<g id="${id}"[^>]*>([\\s\\S]*?)</g>`).exec(svg)![1]!;
  return {
    lines: [...group.matchAll(/<tspan [^>]*>([^<]*)<\/tspan>/g)].map((m) => m[1]!),
    titles: [...group.matchAll(/<title>([^<]*)<\/title>/g)].map((m) => m[1]!),
  };
}

/** The clip rectangle of a column: its x and width. */
function column(svg: string, id: string): { x: number; width: number } {
  const m = new RegExp(`<clipPath id="${id}"><rect x="([\\d.]+)" y="0" width="([\\d.]+)"`).exec(svg)!;
  return { x: Number(m[1]), width: Number(m[2]) };
}

describe('the log axis', () => {
  it('ticks at 1–2–5 values over at most two decades, at powers of ten beyond, 1x always on it', () => {
    expect(logAxis(1, 1)).toEqual({ min: 0.5, max: 2, ticks: [0.5, 1, 2] });
    expect(logAxis(11, 16.4)).toEqual({ min: 1, max: 20, ticks: [1, 2, 5, 10, 20] });
    expect(logAxis(0.8, 16.4)).toEqual({ min: 0.5, max: 20, ticks: [0.5, 1, 2, 5, 10, 20] });
    expect(logAxis(0.05, 0.9)).toEqual({ min: 0.05, max: 1, ticks: [0.05, 0.1, 0.2, 0.5, 1] });
    expect(logAxis(0.9, 95)).toEqual({ min: 0.1, max: 100, ticks: [0.1, 1, 10, 100] });
  });

  it('is clamped to 1/1000–1000x, so 1e308 and 1e-300 give seven ticks, not a tick per unit', () => {
    const ends = { min: AXIS_LIMITS.min, max: AXIS_LIMITS.max, ticks: [0.001, 0.01, 0.1, 1, 10, 100, 1000] };
    expect(logAxis(1e-300, 1e308)).toEqual(ends);
    expect(logAxis(Number.MIN_VALUE, Number.MAX_VALUE)).toEqual(ends);
  });

  it('never has more than seven ticks, nor fewer than three, whatever the range', () => {
    const values = [1e-300, 1e-4, 0.003, 0.02, 0.3, 0.7, 1, 1.04, 1.6, 3, 11, 16, 47, 130, 999, 5000, 1e308];
    for (const lo of values)
      for (const hi of values.filter((v) => v >= lo)) {
        const { ticks } = logAxis(lo, hi);
        expect([lo, hi, ticks.length >= 3 && ticks.length <= 7]).toEqual([lo, hi, true]);
        expect([lo, hi, ticks.includes(1)]).toEqual([lo, hi, true]);
      }
  });

  it('prints far values in exponent form, so a number never grows the file', () => {
    expect([formatSpeedup(1e308), formatSpeedup(1e-300), formatSpeedup(16.4), formatSpeedup(0.01)]).toEqual([
      '1.0e+308x',
      '1.0e-300x',
      '16.40x',
      '0.01x',
    ]);
  });
});

describe('text', () => {
  it('shows controls, C1, bidi and format characters, lone surrogates and non-characters as the one escaper does; breaks as spaces', () => {
    const hostile =
      'a\u0000b\u001bc\u007fd\u0085e\u202ef\u2066g\u200bh\ufeffi\ud800j\ufffek\uffffl\ufdd0m\u{10ffff}n\to\np';
    // The escapes are lib/core/escape.ts's (test/core/escape.test.ts), so the chart shows what the terminal shows.
    expect(showable(hostile)).toBe(escapeControl(hostile.replace(/[\t\n]/g, ' ')));
    expect(showable(hostile)).not.toMatch(
      /[\u0000-\u001f\u007f-\u009f\u202e\u2066\u200b\ufeff\ud800\ufffe\uffff\ufdd0]/,
    );
    expect(showable(hostile).endsWith('n o p')).toBe(true);
  });

  it('wraps at spaces within the width, breaks a word too wide alone, ends a cut text with …', () => {
    const text = 'Mac Studio with Apple M1 Ultra and a name far longer than one line of the label column';
    const lines = wrapText(text, 150, 12, 5);
    expect(lines.join(' ')).toBe(text);
    for (const l of lines) expect([l, textWidth(l, 12) <= 150]).toEqual([l, true]);
    expect(lines.length).toBeGreaterThan(2);
    const word = 'x'.repeat(100);
    const broken = wrapText(word, 60, 12, 100);
    expect(broken.join('')).toBe(word);
    expect(broken.every((l) => textWidth(l, 12) <= 60 && textWidth(`${l}x`, 12) > 60 - 1e-9 === (l !== broken.at(-1))));
    const cut = wrapText(text, 150, 12, 2);
    expect(cut).toHaveLength(2);
    expect([cut[0], cut[1]!.endsWith('…'), textWidth(cut[1]!, 12) <= 150]).toEqual([lines[0], true, true]);
  });
});

describe('the chart', () => {
  it('is null when there is nothing to draw', () => {
    expect(speedupChart([])).toBeNull();
  });

  it('lays out one bar by its rules: columns, the bar from 1x, the whiskers, the texts and their tooltips', () => {
    const svg = speedupChart([bar()])!;
    const labels = column(svg, 'clip-labels');
    const values = column(svg, 'clip-values');
    // The label column is sized to its one label, within its bounds (120–320 px).
    expect(labels).toEqual({ x: 12, width: Math.max(120, Math.ceil(textWidth('host-family · pp512', 12))) });
    const plotX = labels.x + labels.width + 12;
    expect(values.x).toBe(plotX + 420 + 12);
    const axis = logAxis(1.5, 2.5);
    expect(elements(svg, 'axis', 'text').map((t) => t.x)).toEqual(
      axis.ticks.map((t) => (plotX + (Math.log(t / axis.min) / Math.log(axis.max / axis.min)) * 420).toFixed(1)),
    );
    expect([...svg.matchAll(/>([\d.]+x)<\/text>/g)].map((m) => m[1])).toEqual(axis.ticks.map((t) => `${t}x`));
    const at = (v: number) => plotX + (Math.log(v / axis.min) / Math.log(axis.max / axis.min)) * 420;
    const [box] = elements(svg, 'plot', 'rect');
    expect(box).toEqual({
      x: at(1).toFixed(1),
      y: box!.y,
      width: (at(2) - at(1)).toFixed(1),
      height: '10',
      fill: '#2e7d32',
    });
    const [whisker] = elements(svg, 'plot', 'path');
    const mid = Number(box!.y) + 5;
    expect(whisker!.d).toBe(
      `M${at(1.5).toFixed(1)} ${mid.toFixed(1)}H${at(2.5).toFixed(1)}` +
        `M${at(1.5).toFixed(1)} ${(mid - 5).toFixed(1)}V${(mid + 5).toFixed(1)}` +
        `M${at(2.5).toFixed(1)} ${(mid - 5).toFixed(1)}V${(mid + 5).toFixed(1)}`,
    );
    expect(texts(svg, 'headings')).toEqual({
      lines: ['Apple M1 Ultra · macOS 26.5.2'],
      titles: ['Apple M1 Ultra · macOS 26.5.2'],
    });
    expect(texts(svg, 'labels')).toEqual({ lines: ['host-family · pp512'], titles: ['host-family · pp512'] });
    expect(texts(svg, 'values')).toEqual({
      lines: ['2.00x (1.50x–2.50x)', 'b7010'],
      titles: ['2.00x (1.50x–2.50x) · b7010'],
    });
  });

  it('colours by verdict: green faster, red slower, grey no difference shown or no interval; one heading a group', () => {
    const svg = speedupChart([
      bar(),
      bar({ centre: 0.8, low: 0.7, high: 0.9, verdict: 'slower' }),
      bar({ group: 'M3 Max · macOS 15.5', centre: 1.02, low: 0.95, high: 1.09, verdict: 'no-difference-shown' }),
      bar({
        group: 'M3 Max · macOS 15.5',
        centre: 13.1,
        low: null,
        high: null,
        verdict: 'no-interval',
        marker: 'simulated',
      }),
    ])!;
    expect(elements(svg, 'plot', 'rect').map((r) => r.fill)).toEqual(['#2e7d32', '#c62828', '#9e9e9e', '#9e9e9e']);
    expect(elements(svg, 'plot', 'path')).toHaveLength(3);
    expect(texts(svg, 'headings').lines).toEqual(['Apple M1 Ultra · macOS 26.5.2', 'M3 Max · macOS 15.5']);
    expect(texts(svg, 'values').lines.filter((_, i) => i % 2 === 0)).toEqual([
      '2.00x (1.50x–2.50x)',
      '0.80x (0.70x–0.90x)',
      '1.02x (0.95x–1.09x)',
      '13.10x (no interval) simulated',
    ]);
  });

  it('refuses a value it cannot draw with ERR_INVALID_REPORT naming the bar and field', () => {
    const cases: [Partial<ChartBar>, string][] = [
      [{ centre: Number.NaN }, 'bars[1].centre'],
      [{ centre: Number.POSITIVE_INFINITY }, 'bars[1].centre'],
      [{ centre: 0 }, 'bars[1].centre'],
      [{ centre: -2 }, 'bars[1].centre'],
      [{ low: null }, 'bars[1].low'],
      [{ low: 2.1 }, 'bars[1].low'],
      [{ high: Number.NaN }, 'bars[1].low'],
      [{ verdict: 'better' as ChartBar['verdict'] }, 'bars[1].verdict'],
    ];
    for (const [over, field] of cases) {
      const e = thrown(() => speedupChart([bar(), bar(over)]));
      expect([
        e instanceof InvalidReportError,
        (e as InvalidReportError).code,
        (e as InvalidReportError).field,
      ]).toEqual([true, 'ERR_INVALID_REPORT', field]);
    }
  });

  it('draws 1e308 and 1e-300 at the axis ends, at the size of any other chart', () => {
    const plain = speedupChart([bar({ centre: 2, low: 1.5, high: 2.5 })])!;
    const far = speedupChart([bar({ centre: 1e308, low: 1e300, high: 1e308 })])!;
    const near = speedupChart([bar({ centre: 1e-300, low: 1e-300, high: 1e-290, verdict: 'slower' })])!;
    for (const svg of [far, near]) expect(Math.abs(svg.length - plain.length)).toBeLessThan(400);
    expect(texts(far, 'values').lines[0]).toBe('1.0e+308x (1.0e+300x–1.0e+308x)');
    const plotX = column(far, 'clip-labels').width + 24;
    // Both run off the axis, which stops at 1000x and 1/1000x: the bar spans the plot from 1x to its end.
    for (const svg of [far, near]) {
      const [drawn] = elements(svg, 'plot', 'rect');
      expect([drawn!.x, drawn!.width]).toEqual([plotX.toFixed(1), '420.0']);
    }
    expect(elements(far, 'axis', 'text').at(-1)!.x).toBe((plotX + 420).toFixed(1));
    expect(elements(near, 'axis', 'text')[0]!.x).toBe(plotX.toFixed(1));
  });

  it('keeps hostile text inert: the five XML specials escaped, nothing XML cannot hold', () => {
    const svg = speedupChart([
      bar({ group: '<script>&"\'\u0000\u202e\ufffe', label: ']]><!--', note: '\ud800\u0085', marker: '<b>' }),
    ])!;
    expect(svg).not.toMatch(/<script|<!--|<b>|]]>/);
    expect(texts(svg, 'headings').titles).toEqual(['&lt;script&gt;&amp;&quot;&apos;\\u0000\\u202e\\ufffe']);
    // XML 1.0's characters: tab, newline, carriage return, U+0020–U+D7FF, U+E000–U+FFFD, U+10000 and above.
    expect(svg).not.toMatch(/[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/u);
    expect(svg).not.toMatch(/[\u0080-\u009f\u202a-\u202e\u2066-\u2069\ufffe\uffff]/);
  });

  it('grows linearly with the bars: each label is written twice (its lines and its tooltip), no more', () => {
    const label = (i: number) => `profile-${i} · ${'pp512 fa=1 model-'.repeat(20)}${i}`;
    const many = (count: number) =>
      speedupChart(Array.from({ length: count }, (_, i) => bar({ group: `host ${i % 7}`, label: label(i) })))!;
    const [one, two] = [many(500), many(1000)];
    expect(two.length / one.length).toBeGreaterThan(1.9);
    expect(two.length / one.length).toBeLessThan(2.1);
    const perBar = (two.length - one.length) / 500;
    expect(perBar).toBeLessThan(2 * label(999).length + 800);
    // The label column stays bounded and the long labels are wrapped (at most three lines, the last one cut).
    expect(column(two, 'clip-labels').width).toBe(320);
  });

  it('matrix --svg with nothing to draw: exit 2, said on stderr, nothing written', () => {
    const report = path.join(dir, 'report.json');
    const made = runCli(['report', '--json', '--snapshot', 'vz-guest-m1-ultra-tahoe-stock', '--no-doctor']);
    expect(made.status).toBe(0);
    writeFileSync(report, made.stdout);
    const out = path.join(dir, 'none.svg');
    const r = runCli(['matrix', '--svg', out, report]);
    expect([r.status, r.stderr]).toEqual([
      2,
      'metal-cap-shim: --svg: no report has a bench speed result, so there is no chart; nothing written\n',
    ]);
    expect(existsSync(out)).toBe(false);
  });
});

// --- Rendering ---------------------------------------------------------------------------------------------------

const rsvg = spawnSync('rsvg-convert', ['--version'], { encoding: 'utf8' });
const haveRsvg = rsvg.status === 0;
if (!haveRsvg && process.env.CI === undefined)
  console.warn('test/format/svg.test.ts: rendering skipped: rsvg-convert not found (apt-get install librsvg2-bin)');

/** The chart rendered by rsvg-convert at one pixel a unit, decoded. */
function render(svg: string, name: string): PNG {
  const file = path.join(dir, `${name}.svg`);
  writeFileSync(file, svg);
  const png = path.join(dir, `${name}.png`);
  execFileSync('rsvg-convert', ['-o', png, file]);
  return PNG.sync.read(readFileSync(png));
}

/** The pixels drawn (alpha above 0) in `png`, as [x, y]. */
function ink(png: PNG): [number, number][] {
  const out: [number, number][] = [];
  for (let y = 0; y < png.height; y++)
    for (let x = 0; x < png.width; x++) if (png.data[(y * png.width + x) * 4 + 3]! > 0) out.push([x, y]);
  return out;
}

/** `svg` with no clip paths (so text that overflows shows) and only the groups `keep` drawn (no background). */
function only(svg: string, keep: string[]): string {
  return svg
    .replace(/ clip-path="url\(#[\w-]+\)"/g, '')
    .replace(/<rect id="background"[^>]*\/>/, '')
    .replace(/<g id="([\w-]+)"/g, (g, id: string) => (keep.includes(id) ? g : `<g display="none" id="${id}"`));
}

// Long host names and the speed-ups Cua's recipe reported (11–16x), as people will send them.
const HOSTS = [
  `Mac Studio (2022) · Apple M1 Ultra, 20-core CPU, 64-core GPU, 128 GB, macOS 26.6.1 (25G123), rack 7 shelf 3, lab W`,
  `MacBook Pro (14-inch, 2024) · Apple M4 Max, 16-core CPU, 40-core GPU, 128 GB unified memory, macOS 26.5 (25F71)`,
].map((h) => `${h.padEnd(120, '.')} · macOS 26.5.2 (VirtualMac2,1)`);
const CUA: ChartBar[] = HOSTS.flatMap((group, h) =>
  [
    ['cua-release · pp512 fa=1 n_threads=8 ngl=99 qwen2.5-coder-32b-instruct-q4_k_m.gguf', 11.2, 10.4, 12.1],
    ['cua-release · tg128 fa=1 n_threads=8 ngl=99 qwen2.5-coder-32b-instruct-q4_k_m.gguf', 16.4, 15.1, 17.6],
    ['host-family · pp512 fa=0', 13.7, 12.9, 14.6],
    ['apple9-hw-tg · tg128', 1.03, 0.96, 1.11],
  ].map(([label, centre, low, high]) => ({
    group,
    label: label as string,
    centre: centre as number,
    low: h === 1 && centre === 13.7 ? null : (low as number),
    high: h === 1 && centre === 13.7 ? null : (high as number),
    verdict: (h === 1 && centre === 13.7
      ? 'no-interval'
      : (low as number) > 1
        ? 'faster'
        : 'no-difference-shown') as ChartBar['verdict'],
    marker: h === 1 ? 'simulated' : '',
    note: 'b7010, b7347, 3 reports',
  })),
);

describe.skipIf(!haveRsvg && process.env.CI === undefined)('the chart rendered by rsvg-convert', () => {
  it('is found (in CI it must be: scripts/test.sh installs librsvg2-bin)', () => {
    expect([rsvg.status, rsvg.stdout]).toEqual([0, expect.stringMatching(/^rsvg-convert version \d/)]);
  });

  const svg = speedupChart(CUA)!;
  const size = /width="(\d+)" height="(\d+)"/.exec(svg)!.slice(1).map(Number) as [number, number];

  it('has every text inside the picture: drawn on a larger canvas, no ink falls outside it', () => {
    const m = 40;
    const [w, h] = size;
    const larger = only(svg, ['title', 'legend', 'plot', 'axis', 'headings', 'labels', 'values']).replace(
      `width="${w}" height="${h}" viewBox="0 0 ${w} ${h}"`,
      `width="${w + 2 * m}" height="${h + 2 * m}" viewBox="${-m} ${-m} ${w + 2 * m} ${h + 2 * m}"`,
    );
    const drawn = ink(render(larger, 'larger'));
    expect(drawn.length).toBeGreaterThan(1000);
    const outside = drawn.filter(([x, y]) => x < m || y < m || x >= m + w || y >= m + h);
    expect(outside).toEqual([]);
    // The picture as it is: its size.
    const png = render(svg, 'chart');
    expect([png.width, png.height]).toEqual(size);
  });

  it('has each label in its column, clear of the bars, and each value right of the bars', () => {
    const labels = column(svg, 'clip-labels');
    const values = column(svg, 'clip-values');
    const plotX = labels.x + labels.width + 12;
    const labelInk = ink(render(only(svg, ['labels']), 'labels'));
    expect(labelInk.length).toBeGreaterThan(1000);
    expect(labelInk.filter(([x]) => x < labels.x - 1 || x > labels.x + labels.width)).toEqual([]);
    expect(Math.max(...labelInk.map(([x]) => x))).toBeLessThan(plotX);
    const valueInk = ink(render(only(svg, ['values']), 'values'));
    expect(valueInk.length).toBeGreaterThan(1000);
    expect(valueInk.filter(([x]) => x < values.x - 1 || x > values.x + values.width)).toEqual([]);
    expect(Math.min(...valueInk.map(([x]) => x))).toBeGreaterThan(plotX + 420);
    // The long labels were wrapped, not cut: every line of every label is drawn.
    const drawn = texts(svg, 'labels');
    expect(drawn.titles).toEqual(CUA.map((b) => b.label));
    expect(drawn.lines.join(' ')).toBe(CUA.map((b) => b.label).join(' '));
    // And the long host names, in full, each over at most two lines.
    expect(texts(svg, 'headings').lines.join(' ')).toBe(HOSTS.join(' '));
  });

  it('measures no character narrower than DejaVu Sans draws it, Book or Bold', () => {
    // Each printable character of ASCII and Latin-1 twenty times on a line of its own: the ink must end within the
    // measured width (a pixel of slack for a glyph's overhang past its advance).
    const chars = [...Array.from({ length: 95 }, (_, i) => 0x20 + i), ...Array.from({ length: 96 }, (_, i) => 0xa0 + i)]
      .map((cp) => String.fromCodePoint(cp))
      .filter((c) => c.trim() !== '' && showable(c) === c);
    // At the chart's size, where a hinting renderer's rounding of each advance weighs most.
    const [size, line, x0] = [12, 30, 10];
    for (const weight of ['normal', 'bold']) {
      const width = x0 + Math.ceil(Math.max(...chars.map((c) => textWidth(c.repeat(20), size)))) + 20;
      const height = chars.length * line + 10;
      const lines = chars.map(
        (c, i) =>
          `<text x="${x0}" y="${(i + 1) * line}">${c.repeat(20).replace(/&/g, '&amp;').replace(/</g, '&lt;')}</text>`,
      );
      const png = render(
        `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="DejaVu Sans" font-size="${size}" font-weight="${weight}">${lines.join('')}</svg>`,
        `advances-${weight}`,
      );
      const right = new Array<number>(chars.length).fill(-1);
      for (const [x, y] of ink(png)) {
        // Lines far apart, so a descender or an accent is counted with its own line.
        const i = Math.min(chars.length - 1, Math.max(0, Math.round(y / line) - 1));
        right[i] = Math.max(right[i]!, x);
      }
      const over = chars
        .map((c, i) => ({ c, drawn: right[i]! - x0, measured: textWidth(c.repeat(20), size) }))
        .filter((r) => r.drawn > r.measured + 1);
      expect([weight, over]).toEqual([weight, []]);
      // Every line drew something: the font was found.
      expect([weight, right.filter((r) => r < 0)]).toEqual([weight, []]);
    }
  });
});
