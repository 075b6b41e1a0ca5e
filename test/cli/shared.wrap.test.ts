// lib/cli/shared.ts outText and main.ts's help, run in a pseudo-terminal (script(1)) at two widths: prose is wrapped
// to the terminal's width (format/wrap.ts) and tables are not; piped, the output is byte for byte the formatter's.
import { describe, expect, it } from 'vitest';
import { audit } from '../../lib/audit/audit.js';
import { formatAudit } from '../../lib/format/text.js';
import { stylerFor } from '../../lib/format/style.js';
import { wrapToWidth } from '../../lib/format/wrap.js';
import { hasScript, runCli, runCliOnTerminal } from '../support/helpers.js';

const GUEST = 'vz-guest-m1-ultra-tahoe-stock';
/** What the CLI prints on a terminal `columns` wide; it succeeds. */
function onTerminal(columns: number, args: string[]): string {
  const r = runCliOnTerminal(columns, args);
  expect(r.status, r.output).toBe(0);
  return r.output;
}

describe('piped output is the formatter’s, byte for byte', () => {
  it('audit: exactly formatAudit with no wrapping, however long its lines', () => {
    const piped = runCli(['audit', '--snapshot', GUEST]);
    const plain = stylerFor({ isTTY: false }, {}, 'never');
    expect(piped.stdout).toBe(`${formatAudit(audit({ snapshot: GUEST, env: {} }), plain)}\n`);
    expect(Math.max(...piped.stdout.split('\n').map((l) => l.length))).toBeGreaterThan(200);
  });
});

describe.skipIf(!hasScript)('on a terminal, prose wrapped to its width', () => {
  it.each([60, 100])('audit at %i columns: the piped text wrapped at that width, its tables untouched', (columns) => {
    const piped = runCli(['audit', '--snapshot', GUEST]).stdout;
    const tty = onTerminal(columns, ['audit', '--snapshot', GUEST]);
    expect(tty).toBe(wrapToWidth(piped, columns));
    expect(tty).not.toBe(piped);
    // Every line fits, but a table row, which is printed as it is piped.
    const over = tty.split('\n').filter((l) => l.length > columns);
    expect(over.filter((l) => !piped.split('\n').includes(l))).toEqual([]);
    expect(over.every((l) => / {2,}\S+ {2,}/.test(l))).toBe(true);
    expect(tty).toContain('\n  MUL_MAT uses SIMD-group matrix kernels;');
  });

  it.each([60, 100])('audit --help at %i columns: the help reflowed to that width', (columns) => {
    const piped = runCli(['audit', '--help']).stdout;
    const tty = onTerminal(columns, ['audit', '--help']);
    expect(tty).toBe(wrapToWidth(piped, columns, { reflow: true }));
    expect(tty).not.toBe(piped);
  });

  it('JSON is never wrapped', () => {
    const piped = runCli(['audit', '--json', '--snapshot', GUEST]).stdout;
    expect(onTerminal(60, ['audit', '--json', '--snapshot', GUEST])).toBe(piped);
  });
});
