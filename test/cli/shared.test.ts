// lib/cli/shared.ts: what every command prints through. An error line is one line whatever it quotes (control
// characters escaped as JSON escapes them), JSON is pretty and inert, a string option reads as a string or not at all.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { err, out, printJson, text } from '../../lib/cli/shared.js';

/** What `write` received on the stream, while `fn` ran. */
function captured(stream: NodeJS.WriteStream, fn: () => void): string {
  const chunks: string[] = [];
  const spy = vi.spyOn(stream, 'write').mockImplementation((chunk: string | Uint8Array) => {
    chunks.push(String(chunk));
    return true;
  });
  try {
    fn();
  } finally {
    spy.mockRestore();
  }
  return chunks.join('');
}

afterEach(() => vi.restoreAllMocks());

describe('printing', () => {
  it('err: one line, a newline or an escape sequence in what it quotes escaped', () => {
    expect(captured(process.stderr, () => err('bad file a\nb\x1b[2J'))).toBe('bad file a\\nb\\u001b[2J\n');
  });

  it('out: the text and a newline, as it is', () => {
    expect(captured(process.stdout, () => out('line 1\nline 2'))).toBe('line 1\nline 2\n');
  });

  it('printJson: two-space JSON whose strings keep their value, with what a terminal obeys escaped', () => {
    const printed = captured(process.stdout, () => printJson({ name: 'a\x1b[2Jb', n: [1] }));
    expect(printed).toBe('{\n  "name": "a\\u001b[2Jb",\n  "n": [\n    1\n  ]\n}\n');
    expect(JSON.parse(printed)).toEqual({ name: 'a\x1b[2Jb', n: [1] });
  });
});

describe('text', () => {
  it('a string option as given; a flag, a list or nothing as undefined', () => {
    expect([
      text({ profile: 'apple7' }, 'profile'),
      text({ profile: '' }, 'profile'),
      text({ force: true }, 'force'),
      text({ bench: ['a'] }, 'bench'),
      text({}, 'profile'),
    ]).toEqual(['apple7', '', undefined, undefined, undefined]);
  });
});
