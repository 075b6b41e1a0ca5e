import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { clip, INPUT_DEPTH_LIMIT } from './input.js';

/** A JSON file read, or the one-line reason it could not be: never raw bytes, never a bare errno. */
/**
 * A JSON file read and parsed, or why not. `modified`: the file's modification time, taken from the descriptor that
 * was read (null for standard input and for parsed text).
 */
export type JsonFileRead = { ok: true; value: unknown; modified: Date | null } | { ok: false; problem: string };

/** The file name that means standard input, wherever a file is read. */
export const STDIN = '-';

/** How a file name reads in a message: `-` is standard input; a long path is clipped. */
export function fileLabel(file: string): string {
  return file === STDIN ? 'standard input (-)' : clip(file);
}

/**
 * What a JSON file given to the CLI may be: its size, and how deeply its arrays and objects nest. Every file metal-cap-shim
 * reads (a snapshot, a field report) is a few kilobytes and nests about ten levels; the bounds keep a hostile or
 * broken file from costing unbounded memory or time, or the stack of a recursive reader.
 */
export interface JsonLimits {
  maxBytes: number;
  maxDepth: number;
}

/** 16 MiB, 64 levels: as deep as readInput reads, so a file read is a file checked. */
export const JSON_LIMITS: Readonly<JsonLimits> = Object.freeze({
  maxBytes: 16 * 1024 * 1024,
  maxDepth: INPUT_DEPTH_LIMIT,
});

/** A file that is not a regular one: a FIFO would block the reader for ever, a device could stream without end. */
const NOT_REGULAR = 'is not a regular file (a FIFO, a socket or a device): give a file, or `-` to read standard input';

const READ_ERRORS: Record<string, string> = {
  ENOENT: 'does not exist',
  EACCES: 'cannot be read: permission denied',
  EPERM: 'cannot be read: permission denied',
  EISDIR: 'is a directory, not a file',
  ENOTDIR: 'does not exist (a part of its path is not a folder)',
  ELOOP: 'cannot be read: too many symbolic links',
  ENOTREGULAR: NOT_REGULAR,
};

const WAIT = new Int32Array(new SharedArrayBuffer(4));

/** All of standard input, read once per process: `-` given twice reads the same bytes (null: more than the limit). */
let stdinBytes: Buffer | null | undefined;

function readStdin(maxBytes: number): Buffer | null {
  if (stdinBytes !== undefined) return stdinBytes;
  const chunks: Buffer[] = [];
  const chunk = Buffer.alloc(1 << 16);
  let total = 0;
  for (;;) {
    let n: number;
    try {
      n = readSync(0, chunk, 0, chunk.length, null);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // A non-blocking descriptor inherited from the shell: wait for data rather than fail.
      if (code === 'EAGAIN') {
        Atomics.wait(WAIT, 0, 0, 10);
        continue;
      }
      if (code === 'EOF') break;
      throw err;
    }
    if (n === 0) break;
    chunks.push(Buffer.from(chunk.subarray(0, n)));
    total += n;
    if (total > maxBytes) {
      stdinBytes = null;
      return stdinBytes;
    }
  }
  stdinBytes = Buffer.concat(chunks);
  return stdinBytes;
}

/** What a file that is not UTF-8 text is (JSON is UTF-8): its bytes must not reach the terminal. */
const BINARY = 'is not a text file (it holds binary data), so it is not JSON';

/**
 * The bytes as UTF-8 text, or null when they are not UTF-8. An invalid sequence is what marks a binary file; a
 * U+FFFD written as text (a model's token for a partial character, say) is text like any other.
 */
function utf8Text(bytes: Buffer): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return null;
  }
}

/**
 * The regular file's bytes, at most `maxBytes` of them (`bytes` null when it holds more), and its modification time,
 * every fact from the one descriptor read: opened without blocking (a FIFO planted under the name cannot hold the
 * open), then checked with fstat before any read. Throws the open's error, or EISDIR / NOT_REGULAR.
 */
function readBounded(file: string, maxBytes: number): { bytes: Buffer | null; modified: Date } {
  const fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const stats = fstatSync(fd);
    if (stats.isDirectory()) throw Object.assign(new Error('EISDIR'), { code: 'EISDIR' });
    if (!stats.isFile()) throw Object.assign(new Error(NOT_REGULAR), { code: 'ENOTREGULAR' });
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.alloc(Math.min(1 << 20, maxBytes + 1 - total));
      const n = readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) return { bytes: Buffer.concat(chunks, total), modified: stats.mtime };
      chunks.push(chunk.subarray(0, n));
      total += n;
      if (total > maxBytes) return { bytes: null, modified: stats.mtime };
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

function readText(
  file: string,
  maxBytes: number,
): { ok: true; text: string; modified: Date | null } | { ok: false; problem: string } {
  const tooLarge = {
    ok: false as const,
    problem: `is larger than ${maxBytes} bytes, far more than any metal-cap-shim file`,
  };
  try {
    const { bytes, modified } =
      file === STDIN ? { bytes: readStdin(maxBytes), modified: null } : readBounded(file, maxBytes);
    if (bytes === null) return tooLarge;
    const text = utf8Text(bytes);
    return text === null ? { ok: false, problem: BINARY } : { ok: true, text, modified };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? '';
    return {
      ok: false,
      problem: READ_ERRORS[code] ?? `cannot be read (${code || clip((err as Error).message.split('\n')[0] ?? '')})`,
    };
  }
}

/** `line L, column C` of an offset into `text` (both from 1). */
function place(text: string, offset: number): string {
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  return `line ${line}, column ${before.length - before.lastIndexOf('\n')}`;
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const LITERAL = /true|false|null/y;

/**
 * Where `text` stops being JSON (RFC 8259), and what was expected there; null when it is JSON. One pass with an
 * explicit stack, so it is linear in the text and deep nesting cannot overflow. Used only once JSON.parse has failed,
 * to say where in the same words on every Node version (V8's messages differ, and some give no position).
 */
export function jsonSyntaxError(text: string): { offset: number; expected: string } | null {
  const stack: ('{' | '[')[] = [];
  let i = 0;
  const skip = () => {
    while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++;
  };
  // Scans a string starting at text[i] === '"'; returns an error or null with i after the closing quote.
  const string = (): { offset: number; expected: string } | null => {
    i++;
    while (i < text.length) {
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        i++;
        return null;
      }
      if (c < 0x20) return { offset: i, expected: 'no control character inside a string (write it as an escape)' };
      if (c === 0x5c) {
        const e = text[i + 1];
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6)))
            return { offset: i, expected: 'four hex digits after \\u' };
          i += 6;
        } else if (e !== undefined && '"\\/bfnrt'.includes(e)) i += 2;
        else return { offset: i, expected: 'a valid escape (\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)' };
        continue;
      }
      i++;
    }
    return { offset: text.length, expected: 'the closing quote of a string' };
  };
  // 'value': a value must come next; 'after': a value has just ended; 'key': a property name (or '}' right after '{').
  let want: 'value' | 'after' | 'key' | 'first-key' | 'first-value' = 'value';
  for (;;) {
    skip();
    if (i >= text.length) {
      if (want === 'after' && stack.length === 0) return null;
      return { offset: text.length, expected: 'more: the text ends in the middle of a value' };
    }
    const c = text[i]!;
    if (want === 'after') {
      const top = stack[stack.length - 1];
      if (top === undefined) return { offset: i, expected: 'nothing after the JSON value' };
      if (c === ',') {
        i++;
        want = top === '{' ? 'key' : 'value';
      } else if ((c === '}' && top === '{') || (c === ']' && top === '[')) {
        i++;
        stack.pop();
      } else return { offset: i, expected: top === '{' ? "',' or '}'" : "',' or ']'" };
      continue;
    }
    if (want === 'key' || want === 'first-key') {
      if (c === '}' && want === 'first-key') {
        i++;
        stack.pop();
        want = 'after';
        continue;
      }
      if (c !== '"')
        return {
          offset: i,
          expected:
            want === 'first-key' ? "a property name in double quotes, or '}'" : 'a property name in double quotes',
        };
      const bad = string();
      if (bad) return bad;
      skip();
      if (text[i] !== ':') return { offset: Math.min(i, text.length), expected: "':' after the property name" };
      i++;
      want = 'value';
      continue;
    }
    if (c === ']' && want === 'first-value') {
      i++;
      stack.pop();
      want = 'after';
      continue;
    }
    if (c === '{' || c === '[') {
      stack.push(c);
      i++;
      want = c === '{' ? 'first-key' : 'first-value';
      continue;
    }
    if (c === '"') {
      const bad = string();
      if (bad) return bad;
    } else {
      const pattern = c === '-' || (c >= '0' && c <= '9') ? NUMBER : LITERAL;
      pattern.lastIndex = i;
      const m = pattern.exec(text);
      if (!m) return { offset: i, expected: 'a value (an object, array, string, number, true, false or null)' };
      i += m[0].length;
    }
    want = 'after';
  }
}

/**
 * Parses JSON text. A UTF-8 byte order mark at the start is skipped (editors on Windows write one); a syntax error
 * is phrased to follow a name (`x.json is not JSON (…)`), with its line and column.
 */
export function parseJsonText(raw: string, limits: JsonLimits = JSON_LIMITS): JsonFileRead {
  const text = raw.charCodeAt(0) === 0xfeff ? raw.slice(1) : raw;
  if (text.trim() === '') return { ok: false, problem: 'is empty' };
  if (jsonDepth(text, limits.maxDepth) > limits.maxDepth) {
    return {
      ok: false,
      problem: `nests arrays and objects more than ${limits.maxDepth} levels deep, far more than any metal-cap-shim file`,
    };
  }
  // A NUL: a binary file (a file's invalid UTF-8 is found where it is read), whose bytes must not reach the terminal.
  if (text.includes('\u0000')) return { ok: false, problem: BINARY };
  try {
    return { ok: true, value: JSON.parse(text) as unknown, modified: null };
  } catch (err) {
    // V8 parses deeper nesting than a recursive scanner could, and fails on it with a RangeError.
    if (err instanceof RangeError) return { ok: false, problem: 'is nested too deeply to be read' };
    const found = jsonSyntaxError(text);
    if (found === null) return { ok: false, problem: 'is not JSON' };
    const where = place(text, found.offset);
    if (found.offset >= text.length)
      return { ok: false, problem: `is not JSON: it ends in the middle of a value (${where})` };
    return { ok: false, problem: `is not JSON (syntax error at ${where}: expected ${found.expected})` };
  }
}

/**
 * Reads and parses a JSON file (`-`: standard input) of at most `limits.maxBytes` that nests at most
 * `limits.maxDepth` levels. The problem is phrased to follow the file's name: `x.json is empty`.
 */
export function readJsonFile(file: string, limits: JsonLimits = JSON_LIMITS): JsonFileRead {
  const read = readText(file, limits.maxBytes);
  if (!read.ok) return read;
  const parsed = parseJsonText(read.text, limits);
  return parsed.ok ? { ...parsed, modified: read.modified } : parsed;
}

/**
 * Why a parsed JSON value is not one of the kinds a reader takes, or null when its `schema` is one of `accepted`:
 * names the schema found and the ones expected, so a doctor result given as a snapshot says so rather than failing
 * on its first unknown field. `accepted` maps each schema to what makes it (`metal-cap-shim snapshot`).
 */
export function schemaProblem(value: unknown, accepted: Record<string, string>): string | null {
  const expected = Object.entries(accepted)
    .map(([schema, maker]) => `${schema} (${maker})`)
    .join(', ');
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return `is ${Array.isArray(value) ? 'a JSON array' : value === null ? 'null' : `a JSON ${typeof value}`}, not an object with a "schema"; expected ${expected}`;
  }
  const schema = (value as { schema?: unknown }).schema;
  if (typeof schema === 'string' && Object.hasOwn(accepted, schema)) return null;
  const found =
    schema === undefined
      ? 'has no "schema" field'
      : `has schema ${typeof schema === 'string' ? `"${clip(schema)}"` : `of type ${typeof schema}`}`;
  return `${found}; expected ${expected}`;
}
