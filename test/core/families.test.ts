// lib/core/families.ts: names and MTLGPUFamily numbers read both ways, the display form, and the Apple range.
import { describe, expect, it } from 'vitest';
import {
  APPLE_FAMILY_MAX_KNOWN,
  APPLE_FAMILY_MIN,
  FAMILY_NAMES,
  FAMILY_VALUES,
  familyLabel,
  familyNameOf,
  isAppleFamilyValue,
  isFamilyName,
} from '../../lib/core/families.js';

describe('family names and values', () => {
  it('every name reads back from its value, and no two names share one', () => {
    expect(FAMILY_NAMES.map((n) => familyNameOf(FAMILY_VALUES[n]))).toEqual(FAMILY_NAMES);
    expect(new Set(Object.values(FAMILY_VALUES)).size).toBe(FAMILY_NAMES.length);
  });

  it('a value no family has is no name', () => {
    expect([familyNameOf(1011), familyNameOf(1000), familyNameOf(0)]).toEqual([undefined, undefined, undefined]);
  });

  it('isFamilyName knows the names only, not what objects inherit', () => {
    expect(['apple7', 'metal3', 'Apple7', 'apple11', 'toString', ''].map(isFamilyName)).toEqual([
      true,
      true,
      false,
      false,
      false,
      false,
    ]);
  });

  it('the known Apple families run from Apple1 to Apple10', () => {
    expect([familyNameOf(APPLE_FAMILY_MIN), familyNameOf(APPLE_FAMILY_MAX_KNOWN)]).toEqual(['apple1', 'apple10']);
  });

  it('the display form capitalises the first letter only', () => {
    expect(['apple7', 'metal3', 'macCatalyst1', 'common2'].map((n) => familyLabel(n as never))).toEqual([
      'Apple7',
      'Metal3',
      'MacCatalyst1',
      'Common2',
    ]);
  });

  it('the Apple range is 1001 to 1999, named or not, both bounds held', () => {
    expect([1000, 1001, 1011, 1999, 2000, 2001].map(isAppleFamilyValue)).toEqual([
      false,
      true,
      true,
      true,
      false,
      false,
    ]);
  });
});
