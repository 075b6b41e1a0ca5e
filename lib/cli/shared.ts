import type { ParseArgsConfig } from 'node:util';
import { stylerFor, type Styler } from '../format.js';

/** Exit codes, as documented in the README. */
export const EXIT = { ok: 0, failure: 1, usage: 2, refused: 3 } as const;

/** Parsed options of one command: strings, booleans, and lists for the options that may repeat. */
export type Values = Record<string, string | boolean | string[] | undefined>;

/** What a command receives: its parsed options, its positionals, and (for `exec`) what follows `--`. */
export interface Invocation {
  values: Values;
  positionals: string[];
  rest: string[];
}

/**
 * One CLI command, in its own module loaded only when that command runs: cli.ts names it in one table entry and
 * does the parsing (`--help`, `--version`, repeated options, `--json` errors) the same way for every command.
 */
export interface Command {
  /** The text `--help` prints. A function, so text that reads files (bundled snapshot names) is built only then. */
  help(): string;
  options: NonNullable<ParseArgsConfig['options']>;
  /** `files`: takes positionals (matrix); `after-dashdash`: takes a program after `--` (exec); default: none. */
  positionals?: 'files' | 'after-dashdash';
  run(invocation: Invocation): number | Promise<number>;
}

export const out = (s: string): void => {
  process.stdout.write(`${s}\n`);
};
export const err = (s: string): void => {
  process.stderr.write(`${s}\n`);
};

/** Pretty JSON on stdout. */
export function printJson(value: unknown): void {
  out(JSON.stringify(value, null, 2));
}

/** Styling for stdout (plain when it is not a TTY or NO_COLOR is set). */
export function styler(): Styler {
  return stylerFor(process.stdout);
}

/** The value of a string option, or undefined. */
export function text(values: Values, name: string): string | undefined {
  const v = values[name];
  return typeof v === 'string' ? v : undefined;
}
