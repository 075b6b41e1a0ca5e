/**
 * A live doctor run: the native runner does the Metal work on one device at a time and returns raw outcomes; this
 * file orchestrates (stock run, candidate profile applied, patched run, restore), judges and caches.
 */
import { tmpdir } from 'node:os';
import { applyPatch, refusalFor, restore } from '../patch/apply.js';
import { InvalidOptionsError, ProfileActiveError } from '../core/errors.js';
import { loadNative, packageVersion } from '../device/native.js';
import { stockReport } from '../device/probe.js';
import { bindToHost, planProfile } from '../patch/profiles.js';
import { hostOf } from '../device/report.js';
import type { CapabilityReport, DeviceReport, HostInfo, SupportedReport, UnsupportedReason } from '../device/types.js';
import type { NativeBinding, NativeDoctorOptions, NativeDoctorResult } from '../../types/binding.js';
import { cacheKeyFor, writeCache } from './cache.js';
import { assessDevice } from './derive.js';
import { judgeProbe, runFrom, type RawOutcome } from './judge.js';
import type { CheckedDoctorOptions } from './options.js';
import {
  CAPABILITY_PROBE_IDS,
  DOCTOR_PROBE_IDS,
  THREADGROUP_CANDIDATES,
  THREADGROUP_PROBE_GROUPS,
  type DoctorProbeId,
} from './probes.js';
import { DOCTOR_SCHEMA, type DoctorDevice, type DoctorReport, type DoctorRun, type PatchedRun } from './types.js';

function notRun(detail: string): DoctorRun {
  return {
    status: 'skipped',
    detail,
    ms: null,
    compileMs: null,
    provenThreadgroupMemory: null,
    failedThreadgroupMemory: null,
    bufferLength: null,
    maxAbsError: null,
  };
}

function baseReport(
  o: CheckedDoctorOptions,
  generatedAt: string,
): Pick<DoctorReport, 'schema' | 'packageVersion' | 'generatedAt' | 'replayed' | 'candidateProfile' | 'settings'> {
  return {
    schema: DOCTOR_SCHEMA,
    packageVersion: packageVersion(),
    generatedAt,
    replayed: false,
    candidateProfile: o.candidate,
    settings: {
      probes: o.probes,
      timeoutMs: o.timeoutMs,
      mmapFile: o.probes.includes('nocopy-mmap') ? o.mmapFile : null,
      mmapSize: o.probes.includes('nocopy-mmap') && o.mmapFile === null ? o.mmapSize : null,
      device: o.device,
    },
  };
}

function unsupported(
  o: CheckedDoctorOptions,
  generatedAt: string,
  reason: UnsupportedReason,
  detail: string,
  report: CapabilityReport | null,
): DoctorReport {
  return {
    ...baseReport(o, generatedAt),
    supported: false,
    reason,
    detail,
    source: report?.source ?? 'none',
    snapshot: report?.snapshot ?? null,
    host: report?.host ?? null,
    patchedRun: { ran: false, why: detail },
    devices: [],
    restore: null,
    cache: null,
  };
}

/** Why the capability probes do not also run under the candidate profile here, or null when they do. */
function whyNoPatchedRun(o: CheckedDoctorOptions, stock: CapabilityReport): string | null {
  if (!o.probes.some((id) => CAPABILITY_PROBE_IDS.includes(id))) return 'no capability probe was asked';
  const name = o.candidate.name ?? 'the candidate profile';
  const bound = bindToHost(o.candidate, stock.host);
  if (!bound.ok) return bound.detail;
  const { changes } = planProfile(stock.devices, bound.profile);
  if (changes.length === 0) return `${name} changes no answer on this machine`;
  if (refusalFor(hostOf(stock), changes, o.force) !== null) {
    return `${name} raises answers and this host is not known to be a virtual machine: pass force (--force) to measure under it too`;
  }
  return null;
}

/**
 * The native runner's options for one device. Threadgroup sizes above the device's stock limit are dispatched only in
 * a VM: on real hardware that is undefined behaviour, whatever `force` says. The stock limit comes from the stock
 * report, read before any profile was applied (the patched run's answer is the candidate's).
 */
function nativeOptions(
  o: CheckedDoctorOptions,
  device: DeviceReport,
  probes: DoctorProbeId[],
  host: HostInfo,
): NativeDoctorOptions {
  return {
    device: device.index,
    probes,
    timeoutMs: o.timeoutMs,
    threadgroupSizes: [...THREADGROUP_CANDIDATES],
    threadgroupGroups: THREADGROUP_PROBE_GROUPS,
    stockThreadgroupMemory: device.maxThreadgroupMemoryLength ?? 0,
    aboveStockThreadgroupMemory: host.isVirtualMachine === true,
    mmapFile: o.mmapFile,
    mmapSize: o.mmapSize,
    tempDir: tmpdir(),
  };
}

/** Told as each probe starts: which device (of how many), which probe, and whether it is the stock or patched run. */
export type ProbeListener = (event: {
  device: number;
  devices: number;
  probe: DoctorProbeId;
  run: 'stock' | 'patched';
}) => void;

/**
 * The native runner's results for some probes on one device. With a listener, one native call per probe, so each can
 * be announced before it blocks (the CLI's progress line); without, one call for them all.
 */
function runProbes(
  binding: NativeBinding,
  o: CheckedDoctorOptions,
  where: { device: DeviceReport; of: number; host: HostInfo },
  probes: DoctorProbeId[],
  run: 'stock' | 'patched',
  listener: ProbeListener | undefined,
): NativeDoctorResult {
  if (listener === undefined || probes.length === 0)
    return binding.doctor(nativeOptions(o, where.device, probes, where.host));
  const results = probes.map((probe) => {
    listener({ device: where.device.index, devices: where.of, probe, run });
    return binding.doctor(nativeOptions(o, where.device, [probe], where.host));
  });
  return { device: results[0]!.device, outcomes: results.flatMap((r) => r.outcomes) };
}

function outcomeOf(result: NativeDoctorResult, id: DoctorProbeId): RawOutcome | undefined {
  return result.outcomes.find((x) => x.id === id);
}

/**
 * Every probe's verdict on one device from the native runner's results: probes not asked are skipped, an asked
 * probe the runner returned nothing for is an error, and capability probes are judged from both runs when there was
 * a patched run (null: there was none). `device` is the device's stock report (which families it claims).
 */
export function judgeDevice(
  o: CheckedDoctorOptions,
  stockResult: NativeDoctorResult,
  patchedResult: NativeDoctorResult | null,
  device?: DeviceReport,
): DoctorDevice['probes'] {
  const candidate = o.candidate.name ?? 'the candidate profile';
  return DOCTOR_PROBE_IDS.map((id) => {
    if (!o.probes.includes(id)) return judgeProbe(id, notRun('not asked'));
    const s = outcomeOf(stockResult, id);
    const stock = s
      ? runFrom(s, device)
      : { ...notRun('the native runner returned no outcome for it'), status: 'error' as const };
    if (!CAPABILITY_PROBE_IDS.includes(id)) return judgeProbe(id, stock);
    // No second run (patchedRun.why says why): the stock run alone decides.
    if (patchedResult === null) return judgeProbe(id, stock);
    const p = outcomeOf(patchedResult, id);
    const patched = p
      ? runFrom(p, device)
      : { ...notRun('the native runner returned no outcome for it'), status: 'error' as const };
    return judgeProbe(id, stock, patched, candidate);
  });
}

/**
 * Runs the probes on real (or, in the Linux test build, simulated) Metal: every asked probe with stock answers,
 * then the capability probes again with the candidate profile installed, then restores. Hooks are never left
 * installed, also when something throws.
 */
export function runDoctorLive(o: CheckedDoctorOptions, listener?: ProbeListener): DoctorReport {
  const generatedAt = new Date().toISOString();
  const native = loadNative();
  if (native.binding === null) return unsupported(o, generatedAt, native.reason, native.detail, null);
  const binding = native.binding;
  if (binding.status().active) {
    throw new ProfileActiveError(
      'a profile is already applied in this process, and doctor must measure the stock answers first: call restore() before doctor(), or replay a snapshot',
    );
  }
  const stock = stockReport(binding);
  const candidateName = o.candidate.name ?? 'the candidate profile';
  if (!stock.supported) return unsupported(o, generatedAt, 'no-device', stock.detail, stock);
  if (o.device !== null && !stock.devices.some((d) => d.index === o.device)) {
    throw new InvalidOptionsError(
      'device',
      `doctor() option 'device' (--device): there is no device ${o.device}; this machine has ${stock.devices.length} (0–${stock.devices.length - 1})`,
    );
  }
  const devices = stock.devices.filter((d) => o.device === null || d.index === o.device);
  const where = (d: DeviceReport) => ({ device: d, of: devices.length, host: stock.host });
  const stockResults = devices.map((d) => runProbes(binding, o, where(d), o.probes, 'stock', listener));

  let patchedWhy = whyNoPatchedRun(o, stock);
  let patchedResults: NativeDoctorResult[] | null = null;
  let patchedDevices: DeviceReport[] | null = null;
  let restored: DoctorReport['restore'] = null;
  if (patchedWhy === null) {
    const capability = o.probes.filter((id) => CAPABILITY_PROBE_IDS.includes(id));
    try {
      const applied = applyPatch(o.candidate, { force: o.force });
      if (!applied.applied) {
        patchedWhy = `${candidateName} was not applied (${applied.reason}: ${applied.detail})`;
      } else {
        patchedDevices = applied.after.devices;
        patchedResults = devices.map((d) => runProbes(binding, o, where(d), capability, 'patched', listener));
      }
    } finally {
      if (binding.status().active) {
        const r = restore();
        restored = { restoredHooks: r.restoredHooks, conflicts: r.conflicts };
      }
    }
  }

  const assessed = devices.map((d, i) => {
    const probes = judgeDevice(o, stockResults[i]!, patchedResults?.[i] ?? null, d);
    const patched = patchedDevices?.find((p) => p.index === d.index) ?? null;
    return assessDevice(d, patched, probes, stock.host, candidateName, o.force);
  });
  // A run without every capability probe proves too little for `auto`: caching it would replace a full result.
  const cache = o.cache && asksEveryCapabilityProbe(o.probes) ? writeAll(stock, assessed, generatedAt) : null;
  return {
    ...baseReport(o, generatedAt),
    supported: true,
    reason: null,
    detail: null,
    source: stock.source,
    snapshot: stock.snapshot,
    host: stock.host,
    patchedRun: (patchedWhy === null ? { ran: true, why: null } : { ran: false, why: patchedWhy }) satisfies PatchedRun,
    devices: assessed,
    restore: restored,
    cache,
  };
}

/** True when a run asked every capability probe, the only kind of run the cache keeps. */
function asksEveryCapabilityProbe(probes: readonly DoctorProbeId[]): boolean {
  return CAPABILITY_PROBE_IDS.every((id) => probes.includes(id));
}

function writeAll(
  stock: SupportedReport,
  devices: DoctorDevice[],
  generatedAt: string,
): { written: string[]; error: string | null } {
  const written: string[] = [];
  try {
    for (const d of devices) {
      const device = stock.devices.find((x) => x.index === d.index)!;
      written.push(writeCache(cacheKeyFor(stock, device), d, generatedAt));
    }
    return { written, error: null };
  } catch (err) {
    return { written, error: `the doctor cache could not be written: ${(err as Error).message}` };
  }
}
