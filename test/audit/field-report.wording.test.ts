// lib/audit/field-report.ts: a proven profile in the matrix in one form, built-in or not: what it raises, then the
// built-in it is.
import { describe, expect, it } from 'vitest';
import { doctorText, provenProfileText } from '../../lib/audit/field-report.js';
import { resolveProfile } from '../../lib/patch/profiles.js';

describe('provenProfileText', () => {
  it('says what the profile raises, then names the built-in it is; one form, whatever the profile', () => {
    const custom = { ...resolveProfile('apple7'), name: null, deviceName: 'Apple M1 Ultra' };
    const none = { ...resolveProfile('apple7'), name: null, appleFamilyMax: null };
    expect([
      provenProfileText(resolveProfile('apple7')),
      provenProfileText(resolveProfile('cua-release')),
      provenProfileText(custom),
      provenProfileText(none),
    ]).toEqual([
      'Apple7, profile apple7',
      'Apple9, tg 65536, profile cua-release',
      'Apple7, name "Apple M1 Ultra"',
      'no raise',
    ]);
  });

  it('the doctor column gives it with how many reports measured it', () => {
    const row = { reports: 3, measured: 1, simulated: 0, provenProfile: resolveProfile('apple7'), faults: [] };
    expect(doctorText(row)).toEqual({ proven: 'Apple7, profile apple7 (1 of 3 measured)', faults: 'none found' });
  });
});
