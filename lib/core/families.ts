/**
 * MTLGPUFamily values, as Apple's MTLDevice.h defines them (metal-cpp MTLDevice.hpp carries the same numbers).
 * This table is the TypeScript side's single source for family names and numbers; the native module has its own
 * copy (src-native/engine/families.h) and test/device/probe.test.ts asserts the two agree.
 */
export const FAMILY_VALUES = {
  apple1: 1001,
  apple2: 1002,
  apple3: 1003,
  apple4: 1004,
  apple5: 1005,
  apple6: 1006,
  apple7: 1007,
  apple8: 1008,
  apple9: 1009,
  apple10: 1010,
  mac1: 2001,
  mac2: 2002,
  common1: 3001,
  common2: 3002,
  common3: 3003,
  macCatalyst1: 4001,
  macCatalyst2: 4002,
  metal3: 5001,
  metal4: 5002,
} as const;

/** A family name as used in reports and profiles (`apple7`, `metal3`, …). */
export type FamilyName = keyof typeof FAMILY_VALUES;

/** Every known family name, in MTLGPUFamily order. */
export const FAMILY_NAMES = Object.keys(FAMILY_VALUES) as FamilyName[];

/** Lowest and highest Apple family this package knows by name (Apple10 arrived with the macOS 26 SDK). */
export const APPLE_FAMILY_MIN = FAMILY_VALUES.apple1;
export const APPLE_FAMILY_MAX_KNOWN = FAMILY_VALUES.apple10;

/** True when `name` is one of the known family names. */
export function isFamilyName(name: string): name is FamilyName {
  return Object.hasOwn(FAMILY_VALUES, name);
}

/** The family name for an MTLGPUFamily value, or undefined for a value this package does not know. */
export function familyNameOf(value: number): FamilyName | undefined {
  return FAMILY_NAMES.find((n) => FAMILY_VALUES[n] === value);
}

/** `Apple7`, `Metal3`, `MacCatalyst1`: the display form of a family name. */
export function familyLabel(name: FamilyName): string {
  return name.charAt(0).toUpperCase() + name.slice(1);
}

/** True for MTLGPUFamily values in the Apple range (1001–1999), known by name or not. */
export function isAppleFamilyValue(value: number): boolean {
  return value >= 1001 && value <= 1999;
}
