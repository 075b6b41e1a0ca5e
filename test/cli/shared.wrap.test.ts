// lib/cli/shared.ts outText and main.ts's help, run in a pseudo-terminal (script(1)) at two widths: prose is wrapped
// to the terminal's width (format/wrap.ts) and tables are not; piped, the output is byte for byte the formatter's.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { audit } from '../../lib/audit/audit.js';
import { formatAudit } from '../../lib/format/text.js';
import { stylerFor } from '../../lib/format/style.js';
import { wrapToWidth } from '../../lib/format/wrap.js';
import { cli, runCli } from '../support/helpers.js';

const GUEST = 'vz-guest-m1-ultra-tahoe-stock';
const hasScript = spawnSync('script', ['--version'], { encoding: 'utf8' }).status === 0;

/** What the CLI prints on a terminal `columns` wide (script's pseudo-terminal, newlines as the program wrote them). */
function onTerminal(columns: number, args: string[]): string {
  const quoted = [process.execPath, cli, ...args].map((a) => `'${a}'`).join(' ');
  const r = spawnSync('script', ['-qec', `stty cols ${columns} rows 50 -onlcr; exec ${quoted}`, '/dev/null'], {
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: undefined, METAL_CAP_SHIM_SIM_SNAPSHOT: undefined },
    timeout: 60_000,
  });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout;
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
