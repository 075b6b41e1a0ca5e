import { FAMILY_NAMES, type FamilyName } from '../core/families.js';
import { isObject } from '../core/input.js';

// The one list of what a device and a host report: their types (DeviceFacts, HostFacts) and beside them their tables
// (DEVICE_FIELDS, HOST_FIELDS), which the compiler holds to the types. The snapshot's types, its validation, its
// provenance and the conversions between reports and snapshots are derived from the tables: a new Metal property is
// one line in each here plus its read in src-native/ (capabilities.mm, addon.mm's deviceObject). The types are
// declared, not computed from the tables, because the published report's JSON schema is generated from declarations.

/** What is wrong with a value (`null`: nothing), worded to follow "must be". */
export type Check = (value: unknown) => string | null;

export const str: Check = (v) => (typeof v === 'string' && v.length > 0 ? null : 'a non-empty string');
export const bool: Check = (v) => (typeof v === 'boolean' ? null : 'true or false');
export const count =
  (min: number): Check =>
  (v) =>
    Number.isSafeInteger(v) && (v as number) >= min ? null : `an integer ≥ ${min}`;
export const countOrNull =
  (min: number): Check =>
  (v) =>
    v === null ? null : count(min)(v) === null ? null : `an integer ≥ ${min} or null`;
const object: Check = (v) => (isObject(v) ? null : 'an object');
export const CLASS_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `MTLDeviceLocation` values, as strings (macOS 10.15+). */
export const LOCATIONS = ['builtIn', 'slot', 'external', 'unspecified'] as const;
/** `MTLDeviceLocation` as a string (macOS 10.15+). */
export type DeviceLocation = (typeof LOCATIONS)[number];

/** `MTLSize` of `maxThreadsPerThreadgroup`. */
export interface ThreadgroupSize {
  width: number;
  height: number;
  depth: number;
}

/** One family's answer, by name. `null` when `supportsFamily:` is unavailable on this OS. */
export type FamilyAnswers = Record<FamilyName, boolean | null>;

/**
 * When a field may be null: `never`; `unanswered`: in a report, where the running OS cannot answer, while a snapshot
 * must record it; `unrecorded`: in a report, and in a snapshot that did not record it.
 */
export type Nullable = 'never' | 'unanswered' | 'unrecorded';

/**
 * One field: `T` its value in a report, `R` in a snapshot (when that differs beyond null). `check` judges a recorded
 * non-null value; `members`, when given, judge the value's own fields after every field was judged.
 */
export interface Field<T, N extends Nullable, R = T> {
  nullable: N;
  check: Check;
  members?: Record<string, Check>;
  /** A report's value from the addon's raw answer (absent: the answer as it is). */
  fromRaw?: (raw: unknown) => T | null;
  /** Types only; never set. */
  readonly value?: { report: T; recorded: R };
}

const field =
  <N extends Nullable>(nullable: N) =>
  <T, R = T>(check: Check, extra: Omit<Field<T, N, R>, 'nullable' | 'check' | 'value'> = {}): Field<T, N, R> => ({
    nullable,
    check,
    ...extra,
  });
/** A table: one field per key of the type it lists. */
type FieldTable<T> = { [K in keyof T]-?: Field<NonNullable<T[K]>, Nullable, unknown> };

const never = field('never');
const unanswered = field('unanswered');
const unrecorded = field('unrecorded');

/** What one MTLDevice says of itself. `null` means the running OS cannot answer that property. */
export interface DeviceFacts {
  name: string;
  /** The concrete Objective-C class of the device object, e.g. `AppleParavirtDevice`. */
  className: string;
  registryId: number | null;
  families: FamilyAnswers;
  maxThreadgroupMemoryLength: number | null;
  maxThreadsPerThreadgroup: ThreadgroupSize | null;
  recommendedMaxWorkingSetSize: number | null;
  maxBufferLength: number | null;
  hasUnifiedMemory: boolean | null;
  location: DeviceLocation | null;
  /** `architecture.name` (macOS 14+), e.g. `applegpu_g13d`. */
  architecture: string | null;
}

/** Facts about the machine the process runs on. `null` means the OS could not answer. */
export interface HostFacts {
  /** `ProductVersion`, e.g. `26.5.2`. */
  osVersion: string | null;
  /** `kern.osversion`, e.g. `25F71`. */
  osBuild: string | null;
  /** sysctl `hw.model`: `VirtualMac2,1` in an Apple-silicon Virtualization.framework guest. */
  model: string | null;
  /** sysctl `kern.hv_vmm_present` = 1. */
  isVirtualMachine: boolean | null;
  /** Machine architecture of the kernel (`arm64`, `x86_64`). */
  arch: string | null;
  /** sysctl `hw.memsize`: physical memory in bytes (MLX bounds its allocator by 0.95 × this). */
  memoryBytes: number | null;
  /** sysctl `sysctl.proc_translated` = 1: this process is an x86_64 build running under Rosetta on Apple silicon. */
  translated: boolean | null;
  /** sysctl `machdep.cpu.brand_string`: `Apple M1 Ultra`; in a Virtualization.framework guest the host's, with ` (Virtual)`. */
  cpuBrand: string | null;
  /** The chip parsed from `cpuBrand` as bare metal names it (`Apple M1`); null for Intel and brands not shaped like an Apple chip. */
  chip: string | null;
}

/**
 * Every recorded fact about one MTLDevice, in the order reports and snapshots list them. Each has its provenance in a
 * snapshot. A report adds `index` and `isDefault` (where the device is in the list) and the derived
 * `highestAppleFamily` and `simd`.
 */
export const DEVICE_FIELDS = {
  name: never<string>(str),
  /** The concrete Objective-C class of the device object, e.g. `AppleParavirtDevice`. */
  className: never<string>((v) => (typeof v === 'string' && CLASS_NAME.test(v) ? null : 'an Objective-C class name')),
  registryId: unanswered<number>(count(0)),
  families: never<FamilyAnswers, Record<FamilyName, boolean>>(object, {
    members: Object.fromEntries(FAMILY_NAMES.map((n) => [n, bool])),
    // Every known family, null where the addon gave no answer.
    fromRaw: (raw) =>
      Object.fromEntries(
        FAMILY_NAMES.map((n) => {
          const v = (raw as Record<string, unknown>)[n];
          return [n, typeof v === 'boolean' ? v : null];
        }),
      ) as FamilyAnswers,
  }),
  maxThreadgroupMemoryLength: unanswered<number>(count(1)),
  maxThreadsPerThreadgroup: unanswered<ThreadgroupSize>(object, {
    members: { width: count(1), height: count(1), depth: count(1) },
  }),
  recommendedMaxWorkingSetSize: unanswered<number>(count(0)),
  maxBufferLength: unanswered<number>(count(1)),
  hasUnifiedMemory: unanswered<boolean>(bool),
  location: unanswered<DeviceLocation>(
    (v) => ((LOCATIONS as readonly unknown[]).includes(v) ? null : `one of ${LOCATIONS.join(', ')}`),
    { fromRaw: (raw) => ((LOCATIONS as readonly unknown[]).includes(raw) ? (raw as DeviceLocation) : null) },
  ),
  /** `architecture.name` (macOS 14+), e.g. `applegpu_g13d`. */
  architecture: unrecorded<string>(str),
} satisfies FieldTable<DeviceFacts>;

/**
 * Every fact about the machine, in the order reports and snapshots list them; a snapshot adds `platform` (the report's)
 * before them, and each has its provenance there.
 */
export const HOST_FIELDS = {
  /** `ProductVersion`, e.g. `26.5.2`. */
  osVersion: unrecorded<string>(str),
  /** `kern.osversion`, e.g. `25F71`. */
  osBuild: unrecorded<string>(str),
  /** sysctl `hw.model`: `VirtualMac2,1` in an Apple-silicon Virtualization.framework guest. */
  model: unrecorded<string>(str),
  /** sysctl `kern.hv_vmm_present` = 1. */
  isVirtualMachine: unrecorded<boolean>(bool),
  /** Machine architecture of the kernel (`arm64`, `x86_64`). */
  arch: unrecorded<string>(str),
  /** sysctl `hw.memsize`: physical memory in bytes (MLX bounds its allocator by 0.95 × this). */
  memoryBytes: unrecorded<number>(countOrNull(1)),
  /** sysctl `sysctl.proc_translated` = 1: this process is an x86_64 build running under Rosetta on Apple silicon. */
  translated: unrecorded<boolean>(bool),
  /** sysctl `machdep.cpu.brand_string`: `Apple M1 Ultra`; in a Virtualization.framework guest the host's, with ` (Virtual)`. */
  cpuBrand: unrecorded<string>(str),
  /** The chip parsed from `cpuBrand` as bare metal names it (`Apple M1`); null for Intel and brands not shaped like an Apple chip. */
  chip: unrecorded<string>(str),
} satisfies FieldTable<HostFacts>;

type AnyField = Field<unknown, Nullable, unknown>;
type ReportValue<F> = F extends Field<infer T, infer N, unknown> ? (N extends 'never' ? T : T | null) : never;
type RecordedValue<F> = F extends Field<unknown, infer N, infer R> ? (N extends 'unrecorded' ? R | null : R) : never;

/** A table's fields as a report gives them. */
type ReportFacts<Table> = { [K in keyof Table]: ReportValue<Table[K]> };
/** A device's facts as a snapshot records them. */
export type RecordedDeviceFacts = { [K in keyof typeof DEVICE_FIELDS]: RecordedValue<(typeof DEVICE_FIELDS)[K]> };

// The compiler's check that each table says what its type says: the same fields, values and nullability.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const tablesMatchTypes: [
  Same<ReportFacts<typeof DEVICE_FIELDS>, DeviceFacts>,
  Same<ReportFacts<typeof HOST_FIELDS>, HostFacts>,
] = [true, true];
void tablesMatchTypes;

/** The device fields' names, in table order. */
export const DEVICE_FIELD_NAMES = Object.keys(DEVICE_FIELDS) as (keyof DeviceFacts)[];
/** The host fields' names, in table order. */
export const HOST_FIELD_NAMES = Object.keys(HOST_FIELDS) as (keyof HostFacts)[];

/** The check of a recorded value, null allowed where the field may be unrecorded. */
export function recordedCheck(spec: AnyField): Check {
  return spec.nullable === 'unrecorded' ? (v) => (v === null ? null : spec.check(v)) : spec.check;
}

/** The table's checks of recorded values, by field name, in table order. */
export function recordedChecks(table: Record<string, AnyField>): Record<string, Check> {
  return Object.fromEntries(Object.entries(table).map(([name, spec]) => [name, recordedCheck(spec)]));
}

/** The fields a snapshot must record but a report left null (the OS could not answer). */
export function unansweredFields(facts: Record<string, unknown>, table: Record<string, AnyField>): string[] {
  return Object.keys(table).filter((f) => table[f]!.nullable !== 'unrecorded' && facts[f] === null);
}

/** A device's facts as a report gives them, from the addon's raw answers (or a snapshot's recorded ones). */
export function deviceFactsFrom(raw: Record<string, unknown>): DeviceFacts {
  const table: Record<string, AnyField> = DEVICE_FIELDS;
  return Object.fromEntries(
    DEVICE_FIELD_NAMES.map((f) => {
      const fromRaw = table[f]!.fromRaw;
      return [f, fromRaw ? fromRaw(raw[f]) : raw[f]];
    }),
  ) as unknown as DeviceFacts;
}

/** The named fields of a record, in table order. */
export function pickFields<K extends string>(record: object, names: readonly K[]): Record<K, unknown> {
  const r = record as Record<string, unknown>;
  return Object.fromEntries(names.map((f) => [f, r[f]])) as Record<K, unknown>;
}

/** The fields a snapshot may leave unrecorded (null). */
export function unrecordedFields(table: Record<string, AnyField>): string[] {
  return Object.keys(table).filter((f) => table[f]!.nullable === 'unrecorded');
}
