// lib/cli/profile-option.ts: what --profile takes. A name or JSON text passes through to resolveProfile; a path, `-`
// or an existing file is read and resolved; `off`, which only turns the shim off where it applies itself, is refused
// saying so.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { profileArgument } from '../../lib/cli/profile-option.js';
import { InvalidProfileError } from '../../lib/core/errors.js';
import { resolveProfile } from '../../lib/patch/profiles.js';
import { thrown } from '../support/helpers.js';

const dir = mkdtempSync(path.join(tmpdir(), 'mcs-profile-option-'));

describe('profileArgument', () => {
  it('a built-in name, auto and JSON text pass through as they are', () => {
    expect(['apple7', 'auto', ' cua-release ', '{"appleFamilyMax":1009}'].map(profileArgument)).toEqual([
      'apple7',
      'auto',
      ' cua-release ',
      '{"appleFamilyMax":1009}',
    ]);
  });

  it('a .json path is read and resolved', () => {
    const file = path.join(dir, 'mine.json');
    writeFileSync(file, '{"name":"mine","appleFamilyMax":1007}');
    expect(profileArgument(file)).toEqual(resolveProfile({ name: 'mine', appleFamilyMax: 1007 }));
  });

  it('a file that is no profile names the file and the field', () => {
    const file = path.join(dir, 'bad.json');
    writeFileSync(file, '{"appleFamilyMax":1011}');
    const e = thrown(() => profileArgument(file)) as InvalidProfileError;
    expect(e).toBeInstanceOf(InvalidProfileError);
    expect([e.field, e.message.startsWith(`profile file ${file}: `)]).toEqual(['appleFamilyMax', true]);
  });

  it.each(['off', 'OFF', ' Off '])(
    '%j is refused, naming METAL_CAP_SHIM_PROFILE=off as the way to turn the shim off',
    (value) => {
      const e = thrown(() => profileArgument(value)) as InvalidProfileError;
      expect(e).toBeInstanceOf(InvalidProfileError);
      expect([e.code, e.field, e.message]).toEqual([
        'ERR_INVALID_PROFILE',
        'name',
        `'${value.trim()}' is no profile: to run unpatched, leave the shim out, or set METAL_CAP_SHIM_PROFILE=off where it is applied by itself (exec without --profile, metal-cap-shim/register)`,
      ]);
    },
  );
});
