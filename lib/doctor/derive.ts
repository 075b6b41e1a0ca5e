/**
 * From judged probes to decisions: the verified profile (the least profile that turns on what was proven) and the
 * engine settings that avoid the faults found. Pure functions of a device's stock answers and its probes.
 */
import { chipFamily, provableThreadgroupMemory } from '../device/chips.js';
import { FAMILY_VALUES, familyLabel, familyNameOf, type FamilyName } from '../core/families.js';
import { predictChecked } from '../engines/index.js';
import {
  APPLE_GPU_THREADGROUP_MEMORY,
  familyCeiling,
  predictPatchedDevice,
  profiles,
  resolveProfile,
  type Profile,
  type ProfileSpec,
} from '../patch/profiles.js';
import type { DeviceReport, HostInfo } from '../device/types.js';
import { differencesOf, faultsOf } from './judge.js';
import { PROBE_GATING_FAMILIES, type DoctorProbeId } from './probes.js';
import type { DoctorDevice, DoctorProbe, Recommendation, ReportedAnswers } from './types.js';

/** What the derivation reads of the host: its chip, and the brand string it came from (for the reason only). */
export type HostChip = Pick<HostInfo, 'chip' | 'cpuBrand'>;
/** The probe with `id`, if it is in the list. */
export function probeOf(probes: DoctorProbe[], id: DoctorProbeId): DoctorProbe | undefined {
  return probes.find((p) => p.id === id);
}

function proven(probes: DoctorProbe[], id: DoctorProbeId): boolean {
  return probeOf(probes, id)?.judgement === 'proven';
}

function statusText(probes: DoctorProbe[], id: DoctorProbeId): string {
  return `${id} ${probeOf(probes, id)?.status ?? 'not run'}`;
}

/** The answers of a device that verified profiles are compared with. */
export function reportedAnswers(device: DeviceReport): ReportedAnswers {
  return {
    highestAppleFamily: device.highestAppleFamily?.name ?? null,
    maxThreadgroupMemoryLength: device.maxThreadgroupMemoryLength,
    metal3: device.families.metal3,
  };
}

/** The built-in profile's name when `profile` says exactly what it says, otherwise null. */
function builtinNameOf(profile: Profile): string | null {
  const families = JSON.stringify(profile.families);
  for (const b of Object.values(profiles)) {
    const p = b.profile;
    if (
      p.appleFamilyMax === profile.appleFamilyMax &&
      p.maxThreadgroupMemoryLength === profile.maxThreadgroupMemoryLength &&
      p.recommendedMaxWorkingSetSize === profile.recommendedMaxWorkingSetSize &&
      p.deviceName === profile.deviceName &&
      p.mode === profile.mode &&
      JSON.stringify(p.families) === families
    ) {
      return b.name;
    }
  }
  return null;
}

function finish(spec: ProfileSpec | Profile): Profile {
  const profile = resolveProfile(spec);
  return { ...profile, name: builtinNameOf(profile) };
}

/** The lowest Apple family that turns on a gate (the Apple families among its gating families), e.g. apple7. */
function lowestAppleFamily(families: readonly FamilyName[]): FamilyName {
  const apple = families.filter((f) => f.startsWith('apple'));
  return apple.reduce((a, b) => (FAMILY_VALUES[a] <= FAMILY_VALUES[b] ? a : b));
}

/**
 * The Apple family a verified profile claims for each proven path, read from the families that gate the probes (the
 * engine rules, PROBE_GATING_FAMILIES): reduction and matrix need the higher of their lowest Apple families (Apple7),
 * bfloat its lowest (Apple6).
 */
const SIMD_GATE_FAMILY: FamilyName = [
  lowestAppleFamily(PROBE_GATING_FAMILIES['simdgroup-reduction']),
  lowestAppleFamily(PROBE_GATING_FAMILIES['simdgroup-matrix']),
].reduce((a, b) => (FAMILY_VALUES[a] >= FAMILY_VALUES[b] ? a : b));
const BFLOAT_GATE_FAMILY: FamilyName = lowestAppleFamily(PROBE_GATING_FAMILIES.bfloat);

function alreadyAnswered(stock: DeviceReport, family: keyof typeof FAMILY_VALUES): string {
  return stock.families[family] === true ? ` (the device already answers ${familyLabel(family)}: no change here)` : '';
}

/**
 * The name choice of a verified profile: the host chip's name when a heap was proven (MLX skips its heap only on the
 * paravirtual device's name, so the name turns that path on), otherwise the name left alone, with why.
 */
function nameChoice(
  stock: DeviceReport,
  probes: DoctorProbe[],
  host: HostChip | null,
): { deviceName?: string; reason: string } {
  const chip = host?.chip ?? null;
  if (chip === null) {
    const brand = host?.cpuBrand ?? null;
    return {
      reason: `name left as the device reports it: the host's chip is unknown (${brand === null ? 'no brand string' : `brand string ${JSON.stringify(brand)}`})`,
    };
  }
  if (stock.name === chip)
    return { reason: `name left as the device reports it: it already is ${JSON.stringify(chip)}` };
  if (!proven(probes, 'heap')) {
    return {
      reason: `name left as the device reports it: with the host chip's name MLX would create its buffer heap, which it skips on "Apple Paravirtual device", and no heap was proven here (${statusText(probes, 'heap')})`,
    };
  }
  return {
    deviceName: chip,
    reason: `name ${JSON.stringify(chip)}, the host's chip: a heap was created, a buffer placed in it and a compute pass wrote and read it back, so MLX's heap path (which the name turns on) was proven; engines that tune by chip tune for ${chip}`,
  };
}

/**
 * The least profile that turns on what was proven on this device, and one line per choice. With llama.cpp's gates:
 * SIMD-group reduction and matrix proven → Apple7 (both gates need it); otherwise bfloat proven → Apple6 (its
 * bfloat rule); never above the host chip's true family when `host` names a known chip; threadgroup memory raised
 * only to the proven size; Metal3 only when a residency set worked (and the reduction and bfloat paths Metal3 also
 * turns on in llama.cpp were proven); the host chip's name only when a heap was proven. `under`: the candidate
 * profile's name and the threadgroup memory the device reported under it, when the probes also ran there.
 * Threadgroup memory is never raised above 32768 bytes (APPLE_GPU_THREADGROUP_MEMORY: no Apple GPU has more), with or
 * without `force`, whatever a recording says was proven.
 */
export function deriveVerifiedProfile(
  stock: DeviceReport,
  probes: DoctorProbe[],
  under?: { candidate: string; reported: number | null },
  // Kept for its callers: force no longer changes the derivation (no threadgroup size above 32768 is ever claimed).
  _force = false,
  host: HostChip | null = null,
): { profile: Profile; reasons: string[] } {
  const spec: ProfileSpec = { mode: 'raise' };
  const reasons: string[] = [];
  const reduction = proven(probes, 'simdgroup-reduction');
  const matrix = proven(probes, 'simdgroup-matrix');
  const bfloat = proven(probes, 'bfloat');

  const simd = familyLabel(SIMD_GATE_FAMILY);
  const bfl = familyLabel(BFLOAT_GATE_FAMILY);
  if (reduction && matrix) {
    spec.appleFamilyMax = FAMILY_VALUES[SIMD_GATE_FAMILY];
    const bf = bfloat
      ? `bfloat proven too (${simd} includes ${bfl}, llama.cpp’s bfloat rule)`
      : `${simd} includes ${bfl}, which also turns on llama.cpp’s bfloat, not proven here (${statusText(probes, 'bfloat')}): see the recommendations`;
    reasons.push(
      `${simd}: SIMD-group reduction and matrix computed right, llama.cpp’s gates for both; ${bf}${alreadyAnswered(stock, SIMD_GATE_FAMILY)}`,
    );
  } else if (bfloat) {
    spec.appleFamilyMax = FAMILY_VALUES[BFLOAT_GATE_FAMILY];
    reasons.push(
      `${bfl}: bfloat computed right (llama.cpp’s bfloat rule); not ${simd}, which would also claim SIMD-group reduction and matrix (${statusText(probes, 'simdgroup-reduction')}, ${statusText(probes, 'simdgroup-matrix')})${alreadyAnswered(stock, BFLOAT_GATE_FAMILY)}`,
    );
  } else {
    reasons.push(
      `no Apple family raised: nothing an Apple family gates was proven (${statusText(probes, 'simdgroup-reduction')}, ${statusText(probes, 'simdgroup-matrix')}, ${statusText(probes, 'bfloat')})`,
    );
  }
  const trueFamily = chipFamily(host?.chip ?? null);
  const proposed = spec.appleFamilyMax;
  if (typeof proposed === 'number' && trueFamily !== null && proposed > trueFamily) {
    spec.appleFamilyMax = trueFamily;
    reasons.push(
      `capped at ${familyLabel(familyNameOf(trueFamily)!)}, the true family of this host's ${host!.chip}: nothing above the GPU doing the work is claimed`,
    );
  }

  const tg = probeOf(probes, 'threadgroup-memory');
  const reported = stock.maxThreadgroupMemoryLength;
  const measured = tg?.provenThreadgroupMemory ?? null;
  // With a patched run, the proven size is set beside both answers: the candidate's may claim more than was proven.
  const both =
    under === undefined
      ? null
      : `; the device reports ${reported ?? 'nothing'} stock, ${under.reported ?? 'nothing'} under ${under.candidate}`;
  // More than any Apple GPU has is never claimed, force or not: above it a size can only be accepted, never proven
  // (threadgroups that large may never share a core). A recording or cache from before that rule may say more.
  const ceiling = provableThreadgroupMemory(stock);
  const cap = `${measured} bytes are recorded as proven, but no Apple GPU has more than ${APPLE_GPU_THREADGROUP_MEMORY}, so no more is claimed`;
  if (measured === null) {
    reasons.push(
      `threadgroup memory left as reported: no size proven (${statusText(probes, 'threadgroup-memory')})${both ?? ''}`,
    );
  } else if (reported !== null && measured < reported) {
    reasons.push(
      `threadgroup memory left at the reported ${reported} bytes, though only ${measured} were proven: a kernel that asks for more may fail${both ?? ''}`,
    );
  } else if (reported !== null && measured === reported) {
    reasons.push(`threadgroup memory left at the reported ${reported} bytes, which were proven${both ?? ''}`);
  } else if (measured <= ceiling) {
    spec.maxThreadgroupMemoryLength = measured;
    reasons.push(
      `threadgroup memory raised to the proven ${measured} bytes${both ?? ` (the device reports ${reported ?? 'nothing'})`}`,
    );
  } else if (reported !== null && reported >= APPLE_GPU_THREADGROUP_MEMORY) {
    reasons.push(`threadgroup memory left at the reported ${reported} bytes: ${cap}${both ?? ''}`);
  } else {
    spec.maxThreadgroupMemoryLength = APPLE_GPU_THREADGROUP_MEMORY;
    reasons.push(
      `threadgroup memory raised to ${APPLE_GPU_THREADGROUP_MEMORY} bytes: ${cap}${both ?? ` (the device reports ${reported ?? 'nothing'})`}`,
    );
  }

  if (stock.families.metal3 === true) {
    reasons.push('Metal3 left as the device answers it (YES)');
  } else if (!proven(probes, 'residency-set')) {
    reasons.push(`Metal3 not advertised: no residency set was proven to work (${statusText(probes, 'residency-set')})`);
  } else if (!reduction || !bfloat) {
    reasons.push(
      `Metal3 not advertised: a residency set worked, but Metal3 also turns on llama.cpp’s SIMD-group reduction and bfloat (${statusText(probes, 'simdgroup-reduction')}, ${statusText(probes, 'bfloat')})`,
    );
  } else {
    spec.families = { metal3: true };
    reasons.push(
      'Metal3: a residency set was created and used, and the reduction and bfloat paths Metal3 turns on in llama.cpp were proven',
    );
  }
  const name = nameChoice(stock, probes, host);
  if (name.deviceName !== undefined) spec.deviceName = name.deviceName;
  reasons.push(name.reason);
  return { profile: finish(spec), reasons };
}

/**
 * The least of several verified profiles (one per device, or per report): the lowest Apple family ceiling, the
 * smallest threadgroup memory, Metal3 only when every one advertises it, a name only when every one answers the same.
 * A field one of them leaves alone (null) is left alone.
 */
export function leastProfile(list: Profile[]): Profile {
  if (list.length === 0) return finish({ mode: 'raise' });
  if (list.length === 1) return finish(list[0]!);
  const min = (values: (number | null)[]) =>
    values.some((v) => v === null) ? undefined : Math.min(...(values as number[]));
  const spec: ProfileSpec = { mode: 'raise' };
  const family = min(list.map(familyCeiling));
  const tg = min(list.map((p) => p.maxThreadgroupMemoryLength));
  if (family !== undefined) spec.appleFamilyMax = family;
  if (tg !== undefined) spec.maxThreadgroupMemoryLength = tg;
  if (list.every((p) => p.families.metal3 === true)) spec.families = { metal3: true };
  const name = list[0]!.deviceName;
  if (name !== null && list.every((p) => p.deviceName === name)) spec.deviceName = name;
  return finish(spec);
}

function evidence(probe: DoctorProbe): string {
  return `${probe.id} ${probe.status}: ${probe.detail}`;
}

/**
 * Engine settings that avoid what doctor found. `host` decides macOS-version rules of the gate prediction; the
 * prediction ignores this process's environment, so the advice does not depend on where it is computed.
 */
export function recommendationsFor(
  stock: DeviceReport,
  probes: DoctorProbe[],
  verified: Profile,
  host: HostInfo | null,
): Recommendation[] {
  const out: Recommendation[] = [];
  const bfloat = probeOf(probes, 'bfloat');
  if (bfloat?.judgement === 'faulty') {
    out.push({
      engine: 'llama.cpp',
      setting: 'GGML_METAL_BF16_DISABLE=1',
      why: `${evidence(bfloat)}. ggml-metal turns bfloat on for Apple6 or Metal3 devices; this variable keeps BF16 kernels off (node-llama-cpp reads it too)`,
    });
  } else if (bfloat?.judgement !== 'proven') {
    // Only when the profile is what turns bfloat on: a device that claims it by itself was not contradicted here.
    const newest = { env: {}, host, rules: 'current', release: null } as const;
    const before = predictChecked(stock, 'llama.cpp', newest);
    const gates = predictChecked(predictPatchedDevice(stock, verified), 'llama.cpp', newest);
    if (gates.flags.has_bfloat.value && !before.flags.has_bfloat.value) {
      out.push({
        engine: 'llama.cpp',
        setting: 'GGML_METAL_BF16_DISABLE=1',
        why: `bfloat was not proven (${bfloat ? `${bfloat.status}: ${bfloat.detail}` : 'not run'}), but with the verified profile llama.cpp turns it on (${gates.flags.has_bfloat.reason}); this variable keeps BF16 kernels off (node-llama-cpp reads it too)`,
      });
    }
  }
  const mmap = probeOf(probes, 'nocopy-mmap');
  if (mmap?.judgement === 'faulty') {
    const because = `${evidence(mmap)}. llama.cpp hands Metal its mmap-ed weights through newBufferWithBytesNoCopy by default; without mmap it reads them into buffers Metal owns`;
    out.push({ engine: 'llama.cpp', setting: '--no-mmap (llama-bench: -mmp 0)', why: because });
    out.push({ engine: 'node-llama-cpp', setting: 'llama.loadModel({ useMmap: false })', why: because });
  }
  const residency = probeOf(probes, 'residency-set');
  if (residency?.judgement === 'faulty') {
    out.push({
      engine: 'llama.cpp',
      setting: 'GGML_METAL_NO_RESIDENCY=1',
      why: `${evidence(residency)}. ggml-metal creates residency sets by default (arm64 builds with a macOS 15+ SDK); node-llama-cpp 3.19 already sets this while it loads backends`,
    });
    out.push({
      engine: 'mlx',
      setting: 'never advertise Metal3 (profile {"families":{"metal3":false}})',
      why: `${evidence(residency)}. MLX (from v0.19.2) creates residency sets when the device answers Metal3 on macOS 15+, and throws when that fails; no switch of its own turns them off (MLX_RESIDENCY_SET_MAX_PCT, from v0.32.1, only spreads them over several sets)`,
    });
  }
  const heap = probeOf(probes, 'heap');
  if (heap?.judgement === 'faulty') {
    out.push({
      engine: 'mlx',
      setting: 'leave the device name alone (no deviceName in the profile)',
      why: `${evidence(heap)}. MLX places small buffers in a 1 MiB heap, and skips it only when the device is named exactly "Apple Paravirtual device"; with that name left in place it allocates them one by one`,
    });
  }
  return out;
}

/**
 * doctor's findings on one device from its judged probes: the verified profile and why, the recommendations, the
 * faults and the runs that differed. `patched` is the device as it answered under the candidate profile (named
 * `candidate`), if it did. `force` changes nothing here: no verified profile claims more threadgroup memory than any
 * Apple GPU has.
 */
export function assessDevice(
  stock: DeviceReport,
  patched: DeviceReport | null,
  probes: DoctorProbe[],
  host: HostInfo | null,
  candidate = 'the candidate profile',
  force = false,
): DoctorDevice {
  const under = patched === null ? undefined : { candidate, reported: patched.maxThreadgroupMemoryLength };
  const { profile, reasons } = deriveVerifiedProfile(stock, probes, under, force, host);
  return {
    index: stock.index,
    isDefault: stock.isDefault,
    name: stock.name,
    className: stock.className,
    registryId: stock.registryId,
    reported: { stock: reportedAnswers(stock), patched: patched === null ? null : reportedAnswers(patched) },
    probes,
    differences: differencesOf(probes),
    verifiedProfile: profile,
    verifiedProfileReasons: reasons,
    recommendations: recommendationsFor(stock, probes, profile, host),
    faults: faultsOf(probes),
  };
}
