// lib/format/style.ts: the one place colour is decided (--color, FORCE_COLOR, NO_COLOR, TERM, a terminal), and the
// codes a styler writes.
import { describe, expect, it } from 'vitest';
import { colorWanted, stylerFor } from '../../lib/format/style.js';

const TTY = { isTTY: true };
const PIPE = { isTTY: false };

describe('colorWanted', () => {
  it.each<[string, { isTTY?: boolean }, NodeJS.ProcessEnv, 'auto' | 'always' | 'never', boolean]>([
    ['a terminal', TTY, {}, 'auto', true],
    ['a pipe', PIPE, {}, 'auto', false],
    ['a stream that does not say', {}, {}, 'auto', false],
    ['NO_COLOR on a terminal', TTY, { NO_COLOR: '1' }, 'auto', false],
    ['an empty NO_COLOR is unset', TTY, { NO_COLOR: '' }, 'auto', true],
    ['TERM=dumb', TTY, { TERM: 'dumb' }, 'auto', false],
    ['FORCE_COLOR on a pipe, over NO_COLOR', PIPE, { FORCE_COLOR: '1', NO_COLOR: '1' }, 'auto', true],
    ['FORCE_COLOR= (empty) still forces', PIPE, { FORCE_COLOR: '' }, 'auto', true],
    ['FORCE_COLOR=0 on a terminal', TTY, { FORCE_COLOR: '0' }, 'auto', false],
    ['FORCE_COLOR=false on a terminal', TTY, { FORCE_COLOR: 'false' }, 'auto', false],
    ['--color=always over NO_COLOR on a pipe', PIPE, { NO_COLOR: '1' }, 'always', true],
    ['--color=never over FORCE_COLOR on a terminal', TTY, { FORCE_COLOR: '1' }, 'never', false],
  ])('%s', (_what, stream, env, mode, wanted) => {
    expect(colorWanted(stream, env, mode)).toBe(wanted);
  });
});

describe('stylerFor', () => {
  it('wraps in the codes of each style when colour is wanted, and leaves the text as it is when not', () => {
    const on = stylerFor(PIPE, {}, 'always');
    const off = stylerFor(TTY, {}, 'never');
    const styles = ['bold', 'dim', 'good', 'bad', 'warn'] as const;
    expect(styles.map((s) => on[s]('x'))).toEqual([
      '\x1b[1mx\x1b[22m',
      '\x1b[2mx\x1b[22m',
      '\x1b[32mx\x1b[39m',
      '\x1b[31mx\x1b[39m',
      '\x1b[33mx\x1b[39m',
    ]);
    expect(styles.map((s) => off[s]('x'))).toEqual(['x', 'x', 'x', 'x', 'x']);
  });
});
