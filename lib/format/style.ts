// Styling for the CLI's text output, apart from the formatters (text.ts) so that a command printing JSON loads none.
import { inspect } from 'node:util';

/** Text styling for one output stream, coloured or plain as colorWanted decides. */
export interface Styler {
  bold(s: string): string;
  dim(s: string): string;
  good(s: string): string;
  bad(s: string): string;
  warn(s: string): string;
}

/** `--color`: `auto` decides from the stream and the environment; `always` and `never` decide alone. */
export type ColorMode = 'auto' | 'always' | 'never';

/** The values `--color` takes. */
export const COLOR_MODES: readonly ColorMode[] = ['auto', 'always', 'never'];

/**
 * Whether output to `stream` is coloured: the one place the CLI decides it. `always` and `never` (what `--color` alone
 * and `--no-color` mean, lib/cli/main.ts colorArgs) decide alone, whatever the environment says. `auto` follows
 * Node's conventions: as FORCE_COLOR says when it is set (anything but `0` or `false` is on, a terminal or not,
 * whatever NO_COLOR says; `0` and `false` are off, on a terminal too); else never with a non-empty NO_COLOR
 * (https://no-color.org: an empty one is unset) or TERM=dumb; else on a TTY.
 */
export function colorWanted(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv, mode: ColorMode = 'auto'): boolean {
  if (mode !== 'auto') return mode === 'always';
  // Node's convention: FORCE_COLOR wins over NO_COLOR and TERM, and `0` or `false` turns colour off.
  if (env.FORCE_COLOR !== undefined) return env.FORCE_COLOR !== '0' && env.FORCE_COLOR !== 'false';
  if ((env.NO_COLOR ?? '') !== '' || env.TERM === 'dumb') return false;
  return stream.isTTY === true;
}

/**
 * A styler for `stream`. The escape codes are written here, not by util.styleText, which (from Node 20.18 and 22.13)
 * checks process.stdout and Node's own reading of NO_COLOR itself, and so would overrule this decision.
 */
export function stylerFor(
  stream: { isTTY?: boolean },
  env: NodeJS.ProcessEnv = process.env,
  mode: ColorMode = 'auto',
): Styler {
  const enabled = colorWanted(stream, env, mode);
  const wrap = (format: 'bold' | 'dim' | 'green' | 'red' | 'yellow') => {
    const [open, close] = inspect.colors[format]!;
    return (s: string): string => (enabled ? `\x1b[${open}m${s}\x1b[${close}m` : s);
  };
  return { bold: wrap('bold'), dim: wrap('dim'), good: wrap('green'), bad: wrap('red'), warn: wrap('yellow') };
}
