// Prose wrapped to a terminal's width: the one wrapper of the CLI's human output and its help. Only a terminal gets
// it (terminalWidth is null otherwise), so piped output, files and the generated docs keep their lines byte for byte.

// eslint-disable-next-line no-control-regex
const STYLE = /\x1b\[[0-9;]*m/g;

/** A Markdown table's row: `| a | b |`, maybe indented. */
const MARKDOWN_ROW = /^ *\|/;

/** The marks a list item starts with in the CLI's output. */
const BULLETS: ReadonlySet<string> = new Set(['·', '!', '-', '*', '•']);

/** The narrowest column a continuation may start a line's text in: less and a hanging indent helps no one. */
const MIN_TEXT_COLUMNS = 24;

/** How many columns `s` takes on a terminal: its characters, less the style escapes (format/style.ts's). */
function visibleLength(s: string): number {
  return s.replace(STYLE, '').length;
}

/** The width to wrap output to `stream` at: its columns when it is a terminal that says how wide it is, else null. */
export function terminalWidth(stream: { isTTY?: boolean; columns?: number }): number | null {
  return stream.isTTY === true && typeof stream.columns === 'number' && stream.columns > 0 ? stream.columns : null;
}

/**
 * `text` with each line longer than `width` broken at spaces; null leaves it as it is. A line of columns (a gap of two
 * or more spaces after its first word: a table row, an option and its description in the help) is broken only in its
 * last column, each continuation under that column's start, and left whole when that column would be narrower than
 * MIN_TEXT_COLUMNS: a table is never broken out of its shape. A list item (`· `, `! `, `- `) continues under its text,
 * other lines under their indent. A word wider than the line is not cut (a path or a URL must stay whole), and a
 * Markdown table's row is never broken. `reflow` is for the help: hand-wrapped lines are joined first, and a command
 * (an example: `metal-cap-shim …`, `NAME=value npx …`) is never broken. Linear in the text's length.
 */
export function wrapToWidth(text: string, width: number | null, options: { reflow?: boolean } = {}): string {
  if (width === null) return text;
  const lines = text.split('\n');
  const help = options.reflow === true;
  return (help ? joinContinuations(lines) : lines).map((line) => wrapLine(line, width, help)).join('\n');
}

/** A hand-wrapped line is at least this wide where the next word did not fit; a shorter one ends where it was meant to. */
const HAND_WRAPPED_COLUMNS = 80;

/**
 * Text wrapped by hand (the help, at up to 120 columns) as the lines it was wrapped from, so that it can be wrapped
 * again at another width: a line of words alone is joined to the one before it when it starts where that one
 * continues (its indent, or its last column) and that one was wrapped, not ended (it is wide, the next word would
 * not have fitted, and it does not end a sentence).
 */
function joinContinuations(lines: readonly string[]): string[] {
  const joined: string[] = [];
  let hangColumn = -1;
  let previous = '';
  for (const line of lines) {
    const parts = line.split(/( +)/);
    const own = hangAfter(parts);
    const first = indentEnd(parts);
    const indent = first === 0 ? 0 : parts[1]!.length;
    const firstWord = parts[first] ?? '';
    const wrapped =
      visibleLength(previous) + 1 + visibleLength(firstWord) > HAND_WRAPPED_COLUMNS && !/[.!?]$/.test(previous);
    if (own === first && line.trim() !== '' && indent === hangColumn && wrapped) {
      joined[joined.length - 1] += ` ${line.trimStart()}`;
    } else {
      joined.push(line);
      hangColumn = line.trim() === '' ? -1 : visibleLength(parts.slice(0, own).join(''));
    }
    previous = line;
  }
  return joined;
}

function wrapLine(line: string, width: number, help: boolean): string {
  // A Markdown table's row (bench's tables) is data a reader or a converter takes whole.
  if (visibleLength(line) <= width || MARKDOWN_ROW.test(line)) return line;
  // Words at even indices, the runs of spaces before them at odd ones: ['', '  ', 'word', ' ', 'word', …].
  const parts = line.split(/( +)/);
  // A command in the help (its examples) is copied and pasted: broken across lines it would run something else.
  if (help && isCommand(parts)) return line;
  const hang = hangAfter(parts);
  let current = parts.slice(0, hang).join('');
  const indent = ' '.repeat(visibleLength(current));
  if (hang > indentEnd(parts) && indent.length > width - MIN_TEXT_COLUMNS) return line;
  let column = indent.length;
  let empty = true;
  const lines: string[] = [];
  for (let i = hang; i < parts.length; i += 2) {
    const word = parts[i]!;
    const gap = i > hang ? parts[i - 1]! : '';
    const size = visibleLength(word);
    if (!empty && column + gap.length + size > width) {
      lines.push(current);
      current = indent + word;
      column = indent.length + size;
    } else {
      current += gap + word;
      column += gap.length + size;
    }
    if (word !== '') empty = false;
  }
  lines.push(current);
  return lines.join('\n');
}

/** The programs a command line in the CLI's output starts with. */
const PROGRAMS: ReadonlySet<string> = new Set(['metal-cap-shim', 'npx', 'npm', 'node']);

/** Whether a line is a command: after its indent and any `NAME=value` settings, one of PROGRAMS. */
function isCommand(parts: readonly string[]): boolean {
  let i = indentEnd(parts);
  while (i < parts.length && /^[A-Z_][A-Z0-9_]*=/.test(parts[i]!)) i += 2;
  return PROGRAMS.has(parts[i] ?? '');
}

/** The index in `parts` of a line's first word: after its indent. */
function indentEnd(parts: readonly string[]): number {
  return parts[0] === '' && parts.length > 2 ? 2 : 0;
}

/** The index in `parts` of the first word continuations line up under: after the last gap, else after a list item's mark or the indent. */
function hangAfter(parts: readonly string[]): number {
  const first = indentEnd(parts);
  // A list item (`· reason`, `! warning`, `- item`) continues under its text, not under its mark.
  let hang = BULLETS.has(parts[first]!) && parts[first + 1] === ' ' ? first + 2 : first;
  for (let i = first; i + 1 < parts.length; i += 2) {
    if (parts[i + 1]!.length >= 2) hang = i + 2;
  }
  return hang;
}
