/**
 * The one escaper of everything the package prints from input (device names, labels, profiles, file names, a tool's
 * output): human text, JSON, Markdown and SVG all show the same code points the same way. What a terminal, a bidi-aware
 * viewer or a Markdown renderer would act on, or what nobody can see, is written as a JSON escape (`\u001b`, `\n`), so
 * it shows what is there and does nothing; the escapes are JSON's, so a JSON string keeps its value.
 */

// C0, DEL and C1 controls; every format character (soft hyphen, zero-width space and joiners, bidi marks, overrides and
// isolates, word joiner and invisible operators, byte order mark, the tag characters a flag sequence or a smuggled
// prompt is written in); the line and paragraph separators; lone surrogates; the non-characters (U+FFFE, U+FFFF,
// U+FDD0–U+FDEF and the last two of every plane), which an XML document may not hold. The explicit ranges keep the
// unassigned code points of the format blocks (U+2065, U+E0000, U+E0002–U+E001F) in too.
const SHOWN_ESCAPED = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Noncharacter_Code_Point}\u2060-\u206f\u{e0000}-\u{e007f}]/gu;

// The same set but for C0 controls, which JSON.stringify already escapes inside strings and which JSON's own layout
// (the newlines of an indented document) holds outside them.
const RAW_IN_JSON = /[\u007f-\u009f\p{Cf}\p{Zl}\p{Zp}\p{Noncharacter_Code_Point}\u2060-\u206f\u{e0000}-\u{e007f}]/gu;

const NAMED: Readonly<Record<string, string>> = Object.freeze({ '\n': '\\n', '\r': '\\r', '\t': '\\t' });

/** `c` as JSON's `\uXXXX` escapes: one for a code point of the BMP, its surrogate pair for one above. */
function unicodeEscape(c: string): string {
  let out = '';
  for (let i = 0; i < c.length; i++) out += `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`;
  return out;
}

/**
 * `text` with every control, format, separator and non-character code point written as a JSON escape (`\u001b`,
 * `\u200b`, `\udb40\udc41`, `\n`): printed, it shows what is there and does nothing, and no two different strings print
 * the same. Every human output passes its input's strings through here (or through `inert`, which calls it).
 */
export function escapeControl(text: string): string {
  return text.replace(SHOWN_ESCAPED, (c) => NAMED[c] ?? unicodeEscape(c));
}

/**
 * JSON text of `value` (JSON.stringify's, `indent` as its third argument) with what it leaves raw that escapeControl
 * escapes written as `\uXXXX` escapes (CWE-150). Those occur only inside strings, so the text stays valid JSON with the
 * same values.
 */
export function jsonText(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(RAW_IN_JSON, unicodeEscape);
}

/** A copy of report-like data (plain objects, arrays, primitives) whose every string and key is escapeControl'd. */
export function inert<T>(value: T): T {
  if (typeof value === 'string') return escapeControl(value) as T;
  if (Array.isArray(value)) return value.map((v: unknown) => inert(v)) as T;
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  // defineProperty, not assignment: a key named "__proto__" stays a key and never becomes the copy's prototype.
  for (const [k, v] of Object.entries(value))
    Object.defineProperty(out, escapeControl(k), {
      value: inert(v),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  return out as T;
}

/**
 * Text as one Markdown table cell that shows exactly that text: escapeControl'd (a newline cannot end the row), and
 * the characters Markdown acts on (`|` ends a cell; `*`, `_`, `[`, `<`, a backtick… format or link) escaped with a
 * backslash.
 */
export function markdownCell(text: string): string {
  return escapeControl(text).replace(/[\\`*_{}[\]<>|~&#!]/g, (c) => `\\${c}`);
}

/**
 * Text as one Markdown code span that shows exactly that text, escapeControl'd: a backslash does not escape inside a
 * code span, so the fence is one backtick longer than the longest run of backticks in the text, and a space pads a
 * text that starts or ends with a backtick (CommonMark strips one such space from each side). Not for a table cell,
 * where `|` would still end the cell: use markdownCell there.
 */
export function markdownCode(text: string): string {
  const shown = escapeControl(text);
  let longest = 0;
  for (const run of shown.match(/`+/g) ?? []) longest = Math.max(longest, run.length);
  const fence = '`'.repeat(longest + 1);
  // After escapeControl the text has no line break, so `.` reaches its end.
  const stripped = /^ .* $/.test(shown) && /[^ ]/.test(shown);
  const pad = shown.startsWith('`') || shown.endsWith('`') || stripped ? ' ' : '';
  return `${fence}${pad}${shown}${pad}${fence}`;
}

const XML_SPECIAL: Readonly<Record<string, string>> = Object.freeze({
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&apos;',
});

/**
 * Text as XML character data or an attribute value (an SVG's labels): escapeControl'd, so no code point XML forbids
 * (C0 controls, lone surrogates, U+FFFE, U+FFFF) and nothing invisible reaches the file, then the five XML specials
 * written as entities.
 */
export function xmlText(text: string): string {
  return xmlSpecials(escapeControl(text));
}

/** Text already escapeControl'd, with the five XML specials written as entities. */
export function xmlSpecials(text: string): string {
  return text.replace(/[&<>"']/g, (c) => XML_SPECIAL[c]!);
}
