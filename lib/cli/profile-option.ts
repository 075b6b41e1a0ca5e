import { existsSync } from 'node:fs';
import path from 'node:path';
import { InvalidProfileError } from '../core/errors.js';
import { clip } from '../core/input.js';
import { fileLabel, readJsonFile, STDIN } from '../core/jsonfile.js';
import { DEFAULT_PROFILE, profiles, resolveProfile, type ProfileInput } from '../patch/profiles.js';

/** The help lines for --profile, shared by every command that takes one; `width` is the option column's width. */
export function profileHelp(width: number): string {
  return `${'--profile P'.padEnd(width)}built-in name (default ${DEFAULT_PROFILE}), JSON, or a .json file (- for stdin);
  ${' '.repeat(width)}a profile object printed by \`profiles --json\` or \`audit --json\` is accepted back as it is.`;
}

/** METAL_CAP_SHIM_PROFILE's word for no shim (select/auto.ts OFF, spelled here so --profile loads no selection code). */
const OFF = 'off';

/** Names --profile takes that are no built-in profile and no file: `auto`, and `off` (METAL_CAP_SHIM_PROFILE). */
const SPECIAL_NAMES: readonly string[] = ['auto', OFF];

/**
 * A --profile value as a profile: a file when it reads like a path (a `/`, or a `.json` ending) or is `-` (standard
 * input), or when it is no built-in name and a file of that name exists (`myprof`); its content read as a profile.
 * Anything else (a built-in name, JSON text, `auto`) as it is.
 */
export function profileArgument(value: string): ProfileInput {
  const text = value.trim();
  // `off` turns the shim off where it is applied by itself (register, exec); as --profile it would patch nothing.
  if (text.toLowerCase() === OFF) {
    throw new InvalidProfileError(
      'name',
      `'${clip(text, 20)}' is no profile: to run unpatched, leave the shim out, or set METAL_CAP_SHIM_PROFILE=off where it is applied by itself (exec without --profile, metal-cap-shim/register)`,
    );
  }
  const looksLikePath =
    text === STDIN ||
    (!text.startsWith('{') && (text.includes('/') || text.includes(path.sep) || text.endsWith('.json')));
  const existingFile =
    !looksLikePath &&
    !text.startsWith('{') &&
    text !== '' &&
    !Object.hasOwn(profiles, text) &&
    !SPECIAL_NAMES.includes(text.toLowerCase()) &&
    existsSync(path.resolve(text));
  // A name or JSON text from the command line: checked where it is used (resolveProfile), as the types cannot.
  if (!looksLikePath && !existingFile) return value as ProfileInput;
  const read = readJsonFile(text);
  if (!read.ok) throw new InvalidProfileError(null, `profile file ${fileLabel(text)} ${read.problem}`);
  try {
    return resolveProfile(read.value);
  } catch (e) {
    if (e instanceof InvalidProfileError)
      throw new InvalidProfileError(e.field, `profile file ${fileLabel(text)}: ${e.message}`);
    throw e;
  }
}
