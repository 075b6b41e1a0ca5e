import type { NativeDevice, NativeHostFacts, NativeProbe } from '../../types/binding.js';
import { hostChipFacts } from './chips.js';
import { deviceFactsFrom, DEVICE_FIELD_NAMES, HOST_FIELD_NAMES } from './fields.js';
import { FAMILY_NAMES, FAMILY_VALUES, isAppleFamilyValue, type FamilyName } from '../core/families.js';
import type {
  CapabilityReport,
  DerivedFlag,
  DeviceReport,
  FamilyAnswers,
  HostInfo,
  ReportSource,
  UnsupportedReason,
  UnsupportedReport,
} from './types.js';

/** The report format tag. */
export const REPORT_SCHEMA = 'metal-cap-shim/report@1' as const;

/** The field-report format tag (`metal-cap-shim report --json`): defined here, below both its writer and its readers. */
export const FIELD_REPORT_SCHEMA = 'metal-cap-shim/field-report@1' as const;

/**
 * SIMD-group capabilities by family, as Apple's Metal Feature Set Tables assign them. These are the hardware
 * feature rows, not any engine's gate: llama.cpp's own gates (see predictGates) also accept Metal3.
 */
export const SIMD_RULES = {
  reduction: {
    families: ['apple7', 'mac2'],
    rule: 'apple7 || mac2 (Metal Feature Set Tables: SIMD-scoped reduction operations)',
  },
  matrix: {
    families: ['apple7', 'mac2'],
    rule: 'apple7 || mac2 (Metal Feature Set Tables: SIMD-scoped matrix multiply operations)',
  },
  bfloat16: {
    families: ['apple6', 'mac2'],
    rule: 'apple6 || mac2 (Metal Feature Set Tables: bfloat data type, MSL 3.1)',
  },
} as const satisfies Record<string, { families: readonly FamilyName[]; rule: string }>;

/** The device facts a report is derived from: what the addon or a snapshot gives, before derived fields. */
export type RawDevice = NativeDevice;

function anyOf(families: FamilyAnswers, names: readonly FamilyName[], rule: string): DerivedFlag {
  const answers = names.map((n) => families[n]);
  if (answers.some((a) => a === true)) return { value: true, rule };
  return { value: answers.some((a) => a === null) ? null : false, rule };
}

/** The highest Apple family answered YES among the named ones. */
export function highestAppleFamily(families: FamilyAnswers): DeviceReport['highestAppleFamily'] {
  let best: DeviceReport['highestAppleFamily'] = null;
  for (const name of FAMILY_NAMES) {
    const value = FAMILY_VALUES[name];
    if (!isAppleFamilyValue(value) || families[name] !== true) continue;
    if (best === null || value > best.value) best = { value, name };
  }
  return best;
}

/** Fills a report's derived fields (highest family, SIMD-group flags) from a device's raw answers. */
export function deviceReportFrom(raw: RawDevice): DeviceReport {
  const facts = deviceFactsFrom(raw as unknown as Record<string, unknown>);
  const report: Record<string, unknown> = { index: raw.index, isDefault: raw.isDefault };
  for (const f of DEVICE_FIELD_NAMES) {
    report[f] = facts[f];
    // JSON lists highestAppleFamily right after the families it is derived from.
    if (f === 'families') report.highestAppleFamily = highestAppleFamily(facts.families);
  }
  report.simd = {
    reduction: anyOf(facts.families, SIMD_RULES.reduction.families, SIMD_RULES.reduction.rule),
    matrix: anyOf(facts.families, SIMD_RULES.matrix.families, SIMD_RULES.matrix.rule),
    bfloat16: anyOf(facts.families, SIMD_RULES.bfloat16.families, SIMD_RULES.bfloat16.rule),
  };
  return report as unknown as DeviceReport;
}

/** The same device with its derived fields recomputed (after answers were changed by a prediction). */
export function rederive(device: DeviceReport): DeviceReport {
  return deviceReportFrom({ ...device, families: { ...device.families } });
}

/** The addon's host facts with the chip parsed from the brand string. */
export function hostFromNative(facts: NativeHostFacts): HostInfo {
  return { ...facts, ...hostChipFacts(facts.cpuBrand) };
}

/** A report built from the addon's probe. */
export function reportFromNative(probe: NativeProbe): CapabilityReport {
  const simulated = probe.platform === 'simulated';
  const devices = probe.devices.map(deviceReportFrom);
  const base = {
    schema: REPORT_SCHEMA,
    platform: simulated ? (probe.recordedPlatform ?? 'darwin') : 'darwin',
    source: (simulated ? 'simulated' : 'live') as ReportSource,
    snapshot: probe.snapshot,
    host: hostFromNative(probe.host),
  };
  if (devices.length === 0) {
    return {
      ...base,
      supported: false,
      reason: 'no-device',
      detail: simulated
        ? 'the simulated Metal has no device: set METAL_CAP_SHIM_SIM_SNAPSHOT to a snapshot name (see snapshots/)'
        : 'Metal returned no device (a headless session, or a VM without a paravirtual GPU)',
      devices: [],
    };
  }
  return { ...base, supported: true, reason: null, detail: null, devices };
}

/** The report for a process where nothing could be asked. */
export function unsupportedReport(reason: UnsupportedReason, detail: string): UnsupportedReport {
  return {
    schema: REPORT_SCHEMA,
    supported: false,
    platform: process.platform,
    source: 'none',
    snapshot: null,
    reason,
    detail,
    host: null,
    devices: [],
  };
}

/** A report's host, or an all-null one. */
export function hostOf(report: { host: HostInfo | null }): HostInfo {
  return report.host ?? (Object.fromEntries(HOST_FIELD_NAMES.map((f) => [f, null])) as unknown as HostInfo);
}
