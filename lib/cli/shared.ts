import type { ParseArgsConfig } from 'node:util';
import { stylerFor, type ColorMode, type Styler } from '../format/style.js';
import { escapeControl, jsonText } from '../core/escape.js';
import { terminalWidth, wrapToWidth } from '../format/wrap.js';

export { EXIT } from './exit.js';

/** Parsed options of one command: strings, booleans, and lists for the options that may repeat. */
export type Values = Record<string, string | boolean | string[] | undefined>;

/** What a command receives: its parsed options, its positionals, and (for `exec`) what follows `--`. */
export interface Invocation {
  values: Values;
  positionals: string[];
  rest: string[];
}

/**
 * One option of a command, as node:util's parseArgs takes it, with the values it takes when they are a closed list:
 * lib/cli/main.ts refuses any other, with "did you mean", the same way for every command.
 */
export type OptionSpec = NonNullable<ParseArgsConfig['options']>[string] & { choices?: readonly string[] };

/**
 * One CLI command, in its own module loaded only when that command runs: cli.ts names it in one table entry and
 * does the parsing (`--help`, `--version`, repeated options, `--json` errors) the same way for every command.
 */
export interface Command {
  /**
   * The text `--help` prints. A function, so text that reads files (bundled snapshot names) is built only then, and
   * may load its module (a promise) so that running the command does not.
   */
  help(): string | Promise<string>;
  options: Record<string, OptionSpec>;
  /** `files`: takes positionals (matrix); `after-dashdash`: takes a program after `--` (exec); default: none. */
  positionals?: 'files' | 'after-dashdash';
  /** after-dashdash: the boolean option with which the command runs no program (bench --node-llama-cpp). */
  noProgramWith?: string;
  run(invocation: Invocation): number | Promise<number>;
}

export const out = (s: string): void => {
  process.stdout.write(`${s}\n`);
};

/**
 * A command's human output on stdout: on a terminal its prose wrapped to the terminal's width (format/wrap.ts), as it
 * is otherwise, so that a pipe or a file gets the same bytes on any terminal. Never JSON, Markdown or SVG.
 */
export const outText = (s: string): void => {
  out(wrapToWidth(s, terminalWidth(process.stdout)));
};

/**
 * One line on stderr, with every control character escaped: a message quotes file names, profiles and programs,
 * which a newline or an escape sequence in them must not turn into a forged line or a terminal command. The escapes
 * are JSON's, so a JSON line stays valid JSON with the same value.
 */
export const err = (s: string): void => {
  process.stderr.write(`${escapeControl(s)}\n`);
};

/** Pretty JSON on stdout, with what a terminal would obey escaped (jsonText). */
export function printJson(value: unknown): void {
  out(jsonText(value, 2));
}

let colorMode: ColorMode = 'auto';

/** Sets what `--color` asked for, for every styler the command makes. */
export function setColorMode(mode: ColorMode): void {
  colorMode = mode;
}

/** Styling for stdout, coloured as `--color` and the environment say (format/text.ts colorWanted decides). */
export function styler(): Styler {
  return stylerFor(process.stdout, process.env, colorMode);
}

/** The value of a string option, or undefined. */
export function text(values: Values, name: string): string | undefined {
  const v = values[name];
  return typeof v === 'string' ? v : undefined;
}
