// Styling for the CLI's text output, apart from the formatters (text.ts) so that a command printing JSON loads none.
import { inspect } from 'node:util';

/** Text styling for one output stream: plain when it is not a TTY, when NO_COLOR is set, or TERM is dumb. */
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
 * Whether `auto` colours a stream: as FORCE_COLOR says when it is set (anything but `0` or `false` is on, a terminal
 * or not, whatever NO_COLOR says); else never with a non-empty NO_COLOR (https://no-color.org: an empty one is unset)
 * or TERM=dumb; else on a TTY.
 */
export function colorWanted(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv): boolean {
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
  const enabled = mode === 'always' || (mode === 'auto' && colorWanted(stream, env));
  const wrap = (format: 'bold' | 'dim' | 'green' | 'red' | 'yellow') => {
    const [open, close] = inspect.colors[format]!;
    return (s: string): string => (enabled ? `\x1b[${open}m${s}\x1b[${close}m` : s);
  };
  return { bold: wrap('bold'), dim: wrap('dim'), good: wrap('green'), bad: wrap('red'), warn: wrap('yellow') };
}
