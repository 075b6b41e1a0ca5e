// lib/format/wrap.ts: prose wrapped to a terminal's width, on a terminal only; a table row broken only in its last
// column, or not at all; hand-wrapped help reflowed.
import { describe, expect, it } from 'vitest';
import { terminalWidth, wrapToWidth } from '../../lib/format/wrap.js';
import { stylerFor } from '../../lib/format/style.js';

const PROSE = '  The draft model and the projector run on this same device, so these gates are theirs too.';

describe('terminalWidth', () => {
  it("a terminal's columns; null for a pipe, a file, or a terminal that gives no width", () => {
    expect([
      terminalWidth({ isTTY: true, columns: 57 }),
      terminalWidth({ isTTY: false, columns: 57 }),
      terminalWidth({}),
      terminalWidth({ isTTY: true }),
      terminalWidth({ isTTY: true, columns: 0 }),
    ]).toEqual([57, null, null, null, null]);
  });
});

describe('wrapToWidth', () => {
  it('null width: the text as it is, byte for byte', () => {
    const text = `${PROSE}\n\n  a  b\n${'x'.repeat(300)}\n`;
    expect(wrapToWidth(text, null)).toBe(text);
    expect(wrapToWidth(text, null, { reflow: true })).toBe(text);
  });

  it('prose continues under its indent, every line within the width, at two widths', () => {
    expect(wrapToWidth(PROSE, 40).split('\n')).toEqual([
      '  The draft model and the projector run',
      '  on this same device, so these gates',
      '  are theirs too.',
    ]);
    expect(wrapToWidth(PROSE, 60).split('\n')).toEqual([
      '  The draft model and the projector run on this same device,',
      '  so these gates are theirs too.',
    ]);
    // A line that fits, and one exactly as wide as the terminal, are left alone.
    expect(wrapToWidth('  short', 40)).toBe('  short');
    expect(wrapToWidth('y'.repeat(40), 40)).toBe('y'.repeat(40));
  });

  it('a list item continues under its text, not under its mark', () => {
    expect(
      wrapToWidth('    · no Apple family raised: nothing an Apple family gates was proven', 40).split('\n'),
    ).toEqual(['    · no Apple family raised: nothing an', '      Apple family gates was proven']);
    expect(wrapToWidth('  ! the profile raises what the host has not proven', 30).split('\n')).toEqual([
      '  ! the profile raises what',
      '    the host has not proven',
    ]);
  });

  it('in the help, a command, with or without settings before it, is never broken: pasted, it must run as shown', () => {
    const commands = [
      '  metal-cap-shim exec --profile apple9-hw-tg --trace trace.json -- llama-server -m model.gguf',
      'METAL_CAP_SHIM_PROFILE=off FOO_2=x metal-cap-shim exec -- llama-server -m model.gguf',
      '  npx metal-cap-shim audit --snapshot vz-guest-m1-ultra-tahoe-stock --profile cua-release',
    ];
    for (const c of commands) expect(wrapToWidth(c, 40, { reflow: true })).toBe(c);
    // Outside the help a line that starts with the program's name is a title (`metal-cap-shim audit — …`), prose.
    expect(wrapToWidth('metal-cap-shim audit — profile host-family on snapshot', 30).split('\n')).toEqual([
      'metal-cap-shim audit — profile',
      'host-family on snapshot',
    ]);
    // A sentence that names the program is prose.
    expect(
      wrapToWidth('Run metal-cap-shim exec with a profile of yours to see it', 30, { reflow: true }).split('\n'),
    ).toEqual(['Run metal-cap-shim exec with a', 'profile of yours to see it']);
    expect(wrapToWidth('lower=case metal-cap-shim exec -- a b c', 20, { reflow: true }).split('\n')).toEqual([
      'lower=case',
      'metal-cap-shim exec',
      '-- a b c',
    ]);
  });

  it('a word wider than the line stays whole on a line of its own', () => {
    expect(wrapToWidth(`see ${'u'.repeat(30)} now`, 20).split('\n')).toEqual(['see', 'u'.repeat(30), 'now']);
  });

  it("a row of columns breaks in its last column, under that column's start; never when that column is too narrow", () => {
    const row = '  --short          one line per device (every device): name, Apple family stock';
    expect(wrapToWidth(row, 50).split('\n')).toEqual([
      '  --short          one line per device (every',
      '                   device): name, Apple family',
      '                   stock',
    ]);
    const table = `  ${'flag'.padEnd(40)}unknown                 128 to 1024 by key length *`;
    expect(wrapToWidth(table, 70)).toBe(table);
    // A Markdown table's row (bench's tables) is never broken, its rule neither.
    const markdown = `| test | stock t/s | host-family t/s | host-family speed-up [95 % interval] |\n|---|---|---|---|`;
    expect(wrapToWidth(markdown, 30)).toBe(markdown);
  });

  it('style escapes take no width, and a styled span is not cut', () => {
    const s = stylerFor({ isTTY: false }, {}, 'always');
    const styled = `  ${s.dim('one two three four five six')}`;
    const lines = wrapToWidth(styled, 16).split('\n');
    expect(lines.map((l) => l.replace(/\x1b\[[0-9;]*m/g, ''))).toEqual(['  one two three', '  four five six']);
    expect(lines.join(' ')).toContain('\x1b[2m');
    expect(lines.at(-1)).toMatch(/\x1b\[22m$/);
  });

  it('reflow joins what was wrapped by hand, not a line that ended a sentence or a short one', () => {
    const help = [
      `Options: ${'word '.repeat(16)}wrapped`,
      'here, continued.',
      'A new sentence.',
      '  --flag   an option whose description was wrapped by hand at the column the help is',
      '           wrapped at',
      'Short line',
      'not joined',
    ].join('\n');
    expect(wrapToWidth(help, 110, { reflow: true }).split('\n')).toEqual([
      `Options: ${'word '.repeat(16)}wrapped here,`,
      'continued.',
      'A new sentence.',
      '  --flag   an option whose description was wrapped by hand at the column the help is wrapped at',
      'Short line',
      'not joined',
    ]);
    // Without reflow each line is wrapped on its own.
    expect(wrapToWidth(help, 110).split('\n')[1]).toBe('here, continued.');
  });

  it('is linear: a megabyte of words and of spaces is wrapped at once', () => {
    const words = 'ab '.repeat(350_000);
    const spaces = `a${' '.repeat(1_000_000)}b`;
    const started = performance.now();
    expect(wrapToWidth(words, 80).split('\n').length).toBe(Math.ceil(350_000 / 27));
    expect(wrapToWidth(spaces, 80, { reflow: true })).toBe(spaces);
    const settings = `${'A=B '.repeat(250_000)}x`;
    expect(wrapToWidth(settings, 80, { reflow: true }).split('\n').length).toBe(Math.ceil(250_000 / 20) + 1);
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});
