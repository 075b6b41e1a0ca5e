import { closeSync, openSync, readSync, statSync } from 'node:fs';

/** A JSON file read, or the one-line reason it could not be: never raw bytes, never a bare errno. */
export type JsonFileRead = { ok: true; value: unknown } | { ok: false; problem: string };

/**
 * What a JSON file given to the CLI may be: its size, and how deeply its arrays and objects nest. Every file metal-cap-shim
 * reads (a snapshot, a field report) is a few kilobytes and nests about ten levels; the bounds keep a hostile or
 * broken file from costing unbounded memory or time, or the stack of a recursive reader.
 */
export interface JsonLimits {
  maxBytes: number;
  maxDepth: number;
}

/** 16 MiB, 64 levels. */
export const JSON_LIMITS: Readonly<JsonLimits> = Object.freeze({ maxBytes: 16 * 1024 * 1024, maxDepth: 64 });

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

/** The file's bytes, at most `maxBytes` of them: null when it holds more (a pipe is read only that far). */
function readBounded(file: string, maxBytes: number): Buffer | null {
  const fd = openSync(file, 'r');
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.alloc(Math.min(1 << 20, maxBytes + 1 - total));
      const n = readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) return Buffer.concat(chunks, total);
      chunks.push(chunk.subarray(0, n));
      total += n;
      if (total > maxBytes) return null;
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * How deeply the arrays and objects of a JSON text nest, counted without parsing (brackets inside strings do not
 * count), and without recursion: stopping at `limit` + 1.
 */
export function jsonDepth(text: string, limit = Infinity): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b || c === 0x7b) {
      depth++;
      if (depth > deepest) deepest = depth;
      if (deepest > limit) return deepest;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return deepest;
}

/**
 * Reads and parses a JSON file of at most `limits.maxBytes` that nests at most `limits.maxDepth` levels. The problem is
 * phrased to follow the file's name: `x.json is empty`.
 */
export function readJsonFile(file: string, limits: JsonLimits = JSON_LIMITS): JsonFileRead {
  let text: string;
  try {
    if (statSync(file).isDirectory()) return { ok: false, problem: READ_ERRORS.EISDIR! };
    const bytes = readBounded(file, limits.maxBytes);
    if (bytes === null) return { ok: false, problem: `is larger than ${limits.maxBytes} bytes, far more than any metal-cap-shim file` };
    text = bytes.toString('utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? '';
    return { ok: false, problem: READ_ERRORS[code] ?? `cannot be read (${code || (err as Error).message.split('\n')[0]})` };
  }
  if (text.trim() === '') return { ok: false, problem: 'is empty' };
  if (jsonDepth(text, limits.maxDepth) > limits.maxDepth) {
    return { ok: false, problem: `nests arrays and objects more than ${limits.maxDepth} levels deep, far more than any metal-cap-shim file` };
  }
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
