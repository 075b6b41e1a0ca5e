import { readFileSync, statSync } from 'node:fs';

/** A JSON file read, or the one-line reason it could not be: never raw bytes, never a bare errno. */
export type JsonFileRead = { ok: true; value: unknown } | { ok: false; problem: string };

const READ_ERRORS: Record<string, string> = {
  ENOENT: 'does not exist',
  EACCES: 'cannot be read: permission denied',
  EPERM: 'cannot be read: permission denied',
  EISDIR: 'is a directory, not a file',
  ENOTDIR: 'does not exist (a part of its path is not a folder)',
  ELOOP: 'cannot be read: too many symbolic links',
};

/** Where a JSON syntax error sits, as `line L, column C`, from V8's `at position N`; null when V8 did not say. */
function errorPlace(text: string, message: string): string | null {
  const match = /position (\d+)/.exec(message);
  if (!match) return null;
  const before = text.slice(0, Number(match[1]));
  const line = before.split('\n').length;
  const column = before.length - before.lastIndexOf('\n');
  return `line ${line}, column ${column}`;
}

/** Reads and parses a JSON file. The problem is phrased to follow the file's name: `x.json is empty`. */
export function readJsonFile(file: string): JsonFileRead {
  let text: string;
  try {
    if (statSync(file).isDirectory()) return { ok: false, problem: READ_ERRORS.EISDIR! };
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? '';
    return { ok: false, problem: READ_ERRORS[code] ?? `cannot be read (${code || (err as Error).message.split('\n')[0]})` };
  }
  if (text.trim() === '') return { ok: false, problem: 'is empty' };
  // A NUL or an invalid UTF-8 sequence (decoded as U+FFFD): a binary file, whose bytes must not reach the terminal.
  if (text.includes('\u0000') || text.includes('\uFFFD')) return { ok: false, problem: 'is not a text file (it holds binary data), so it is not JSON' };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (err) {
    const message = (err as Error).message;
    if (/end of JSON input/i.test(message)) return { ok: false, problem: 'is not JSON: it ends in the middle of a value' };
    const place = errorPlace(text, message);
    if (place) return { ok: false, problem: `is not JSON (syntax error at ${place})` };
    // V8 names the offending character without a position; show it only when it is plain printable text.
    const token = /Unexpected token '(.)'/.exec(message)?.[1];
    return { ok: false, problem: token && /^[\x21-\x7e]$/.test(token) ? `is not JSON (unexpected '${token}')` : 'is not JSON' };
  }
}
