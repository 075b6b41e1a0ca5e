// lib/format/text.ts: tables padded into columns, and audit's sub-tables of one device keeping one width per column.
import { describe, expect, it } from 'vitest';
import { audit } from '../../lib/audit/audit.js';
import { listSnapshots } from '../../lib/device/snapshots.js';
import { columnWidths, formatAudit, table } from '../../lib/format/text.js';
import { stylerFor } from '../../lib/format/style.js';

const plain = stylerFor({ isTTY: false }, {}, 'never');
const red = stylerFor({ isTTY: false }, {}, 'always');

describe('columnWidths and table', () => {
  it('each column is as wide as its widest visible cell over every table given; escape codes take no width', () => {
    const a = [
      ['ab', 'c', 'last'],
      ['a', red.bad('cdef'), 'x'],
    ];
    const b = [['abcd', 'c']];
    expect(columnWidths([a])).toEqual([2, 4, 4]);
    expect(columnWidths([a, b])).toEqual([4, 4, 4]);
    expect(columnWidths([])).toEqual([]);
  });

  it('pads every cell but the last to its column, two spaces apart, with no trailing blanks', () => {
    const a = [
      ['ab', 'c', 'last'],
      ['a', 'cdef', ''],
    ];
    expect(table(a)).toBe('  ab  c     last\n  a   cdef');
    expect(table(a, '', columnWidths([a, [['abcdef']]]))).toBe('ab      c     last\na       cdef');
  });
});

describe('formatAudit: one width per column down a device block', () => {
  it.each(listSnapshots())('%s: stock and patched start at the same column in every sub-table', (snapshot) => {
    const text = formatAudit(audit({ snapshot, env: {} }), plain);
    for (const block of text.split('\n\nDevice ').slice(1)) {
      const heads = block
        .split('\n')
        .filter((l) => /^ {2}(answer|llama\.cpp \(|MLX \().* {2}stock {2,}patched$/.test(l));
      // The answers and both engines' tables.
      expect(heads.length).toBe(3);
      const columns = heads.map((l) => [l.indexOf('  stock '), l.indexOf('  patched')]);
      expect(columns).toEqual(heads.map(() => columns[0]));
    }
  });
});
