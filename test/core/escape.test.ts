import { describe, expect, it } from 'vitest';
import { escapeControl, inert, jsonText, markdownCell, markdownCode, xmlText } from '../../lib/core/escape.js';

/** One code point of each class the escaper shows, and how it is shown. */
const CLASSES: readonly (readonly [string, string, string])[] = [
  ['C0 control (ESC)', '\u001b', '\\u001b'],
  ['C0 control (NUL)', '\u0000', '\\u0000'],
  ['newline', '\n', '\\n'],
  ['carriage return', '\r', '\\r'],
  ['tab', '\t', '\\t'],
  ['DEL', '\u007f', '\\u007f'],
  ['C1 control (CSI)', '\u009b', '\\u009b'],
  ['C1 control (NEL)', '\u0085', '\\u0085'],
  ['soft hyphen', '\u00ad', '\\u00ad'],
  ['Arabic letter mark', '\u061c', '\\u061c'],
  ['zero-width space', '\u200b', '\\u200b'],
  ['zero-width joiner', '\u200d', '\\u200d'],
  ['right-to-left mark', '\u200f', '\\u200f'],
  ['line separator', '\u2028', '\\u2028'],
  ['paragraph separator', '\u2029', '\\u2029'],
  ['right-to-left override', '\u202e', '\\u202e'],
  ['word joiner', '\u2060', '\\u2060'],
  ['invisible plus', '\u2064', '\\u2064'],
  ['unassigned format block U+2065', '\u2065', '\\u2065'],
  ['right-to-left isolate', '\u2067', '\\u2067'],
  ['byte order mark', '\ufeff', '\\ufeff'],
  ['tag character U+E0000', '\u{e0000}', '\\udb40\\udc00'],
  ['tag letter A', '\u{e0041}', '\\udb40\\udc41'],
  ['cancel tag', '\u{e007f}', '\\udb40\\udc7f'],
  ['non-character U+FFFE', '\ufffe', '\\ufffe'],
  ['non-character U+FFFF', '\uffff', '\\uffff'],
  ['non-character U+FDD0', '\ufdd0', '\\ufdd0'],
  ['non-character U+FDEF', '\ufdef', '\\ufdef'],
  ['plane end U+1FFFE', '\u{1fffe}', '\\ud83f\\udffe'],
  ['plane end U+10FFFF', '\u{10ffff}', '\\udbff\\udfff'],
  ['lone high surrogate', '\ud800', '\\ud800'],
  ['lone low surrogate', '\udc00', '\\udc00'],
];

/** Printable text around each class, kept as it is: letters, accents, CJK, an emoji, the edges of the ranges. */
const KEPT = [
  'M1 Ultra',
  'é',
  '中文',
  '\u{1f600}',
  '\u00a0',
  '\u00ae',
  '\u2027',
  '\u202f',
  '\u2070',
  '\ufdcf',
  '\ufdf0',
  '\ufffd',
  '\u{e0080}',
];

describe('escapeControl', () => {
  it.each(CLASSES)('shows a %s as its escape', (_name, raw, shown) => {
    expect(escapeControl(`a${raw}b`)).toBe(`a${shown}b`);
  });

  it('keeps every printable code point next to the escaped ranges as it is', () => {
    expect(KEPT.map(escapeControl)).toEqual(KEPT);
  });

  it('escapes every class in one string, and its output parses back as a JSON string to the input', () => {
    const all = CLASSES.map(([, raw]) => raw).join('x');
    const shown = escapeControl(all);
    expect(shown).toBe(CLASSES.map(([, , s]) => s).join('x'));
    expect(shown).toMatch(/^[\x20-\x7e]+$/);
    expect(JSON.parse(`"${shown}"`)).toBe(all);
  });
});

describe('jsonText', () => {
  it('writes every class as an escape inside strings, keeps the layout, and parses back to the same value', () => {
    const value = { [`k${CLASSES.map(([, raw]) => raw).join('x')}`]: CLASSES.map(([, raw]) => `v${raw}`) };
    const text = jsonText(value, 2);
    expect(text).toMatch(/^[\x20-\x7e\n]+$/);
    expect(text.split('\n')).toHaveLength(CLASSES.length + 4);
    expect(JSON.parse(text)).toEqual(value);
  });

  it('leaves printable non-ASCII as it is', () => {
    expect(jsonText({ name: 'é中\u{1f600}' })).toBe('{"name":"é中\u{1f600}"}');
  });
});

describe('inert', () => {
  it('escapes strings and keys at every depth, keeps other values, and a "__proto__" key stays a key', () => {
    const copy = inert(JSON.parse('{"a\\u200b":["\\u001b",1,null,true,{"__proto__":"\\ufeff"}]}'));
    expect(JSON.stringify(copy)).toBe('{"a\\\\u200b":["\\\\u001b",1,null,true,{"__proto__":"\\\\ufeff"}]}');
    expect(Object.getPrototypeOf((copy as Record<string, unknown[]>)['a\\u200b']![4])).toBe(Object.prototype);
  });
});

describe('markdownCell', () => {
  it('escapes what Markdown acts on and shows the invisible', () => {
    expect(markdownCell('a|b`c*d_e[f]<g>\\h\u200bi\nj')).toBe('a\\|b\\`c\\*d\\_e\\[f\\]\\<g\\>\\\\h\\\\u200bi\\\\nj');
  });
});

describe('markdownCode', () => {
  it.each([
    ['plain text', 'apple7', '`apple7`'],
    ['a backtick inside', 'a`b', '``a`b``'],
    ['a run of three', 'a```b`c', '````a```b`c````'],
    ['a leading backtick', '`x', '`` `x ``'],
    ['a trailing backtick', 'x`', '`` x` ``'],
    ['a space on both sides (CommonMark strips one each)', ' x ', '`  x  `'],
    ['a space on one side only', ' x', '` x`'],
    ['only spaces (nothing stripped)', '  ', '`  `'],
    ['a newline and a zero-width space', 'a\n\u200b', '`a\\n\\u200b`'],
  ])('%s', (_name, text, expected) => {
    expect(markdownCode(text)).toBe(expected);
  });

  it('a device name with backticks, a link and HTML stays inside one span', () => {
    const code = markdownCode('{"deviceName":"x` [a](http://e) <img src=x onerror=alert(1)> `"}');
    const fence = code.match(/^`+/)![0];
    expect(fence).toBe('``');
    expect(code.endsWith(fence)).toBe(true);
    expect(code.slice(fence.length, -fence.length)).not.toMatch(new RegExp(`(^|[^\`])${fence}([^\`]|$)`));
  });
});

describe('xmlText', () => {
  it('writes the five specials as entities and every class as its visible escape', () => {
    expect(xmlText(`<a href="x">&'${CLASSES.map(([, raw]) => raw).join('x')}`)).toBe(
      `&lt;a href=&quot;x&quot;&gt;&amp;&apos;${CLASSES.map(([, , s]) => s).join('x')}`,
    );
  });

  it('leaves no code point XML 1.0 forbids', () => {
    const all = Array.from({ length: 0x110000 / 0x101 }, (_, i) => i * 0x101)
      .filter((c) => c < 0xd800 || c > 0xdfff)
      .map((c) => String.fromCodePoint(c))
      .join('');
    const text = xmlText(`${all}\ufffe\uffff\ud800`);
    expect(text).not.toMatch(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])/);
  });
});
