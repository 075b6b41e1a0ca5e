// Generated regions of a Markdown file: the text between `<!-- docs:start NAME … -->` and `<!-- docs:end NAME -->` is
// written by scripts/check/docs.mjs and nothing else. The start marker may carry a note after the name (where the
// region comes from); the note is kept as it is.

/** The start marker of region `name` (with or without a note), as a pattern, and its end marker. */
function markers(name) {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return { start: new RegExp(`<!-- docs:start ${escaped}(?:\\s[^>]*)?-->`), end: `<!-- docs:end ${name} -->` };
}

/** Where region `name`'s body begins and ends in `text`, or null when it has no such region. */
function locate(text, name) {
  const { start, end } = markers(name);
  const open = start.exec(text);
  if (open === null) return null;
  const from = open.index + open[0].length;
  const to = text.indexOf(end, from);
  return to < 0 ? null : { from, to };
}

/**
 * `text` with region `name` replaced by `body` (a newline before and after it). `file` names the file in the error
 * thrown when the region is missing.
 */
export function replaceRegion(text, name, body, file) {
  const at = locate(text, name);
  if (at === null) throw new Error(`${file} has no region <!-- docs:start ${name} --> … <!-- docs:end ${name} -->`);
  return `${text.slice(0, at.from)}\n${body}\n${text.slice(at.to)}`;
}
