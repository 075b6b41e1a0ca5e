import { isVmHost, namedParavirtual, PARAVIRTUAL_DEVICE_NAME } from '../device/paravirtual.js';
import {
  ask,
  macosAtLeast,
  nullFamilyWarnings,
  RESIDENCY_MIN_MACOS,
  result,
  type Derived,
  type GateFlag,
  type GateRule,
  type RuleContext,
} from './common.js';

/** The values MLX derives at device/allocator init. */
export interface MlxValues {
  /** Whether MLX creates MTLResidencySets (and throws if it cannot). */
  residencySets: boolean;
  /** GPU generation MLX parses from the architecture name (13 for `applegpu_g13s`). */
  architectureGeneration: number | null;
  /** MLX allocator's garbage-collection limit in bytes. */
  allocatorLimitBytes: number | null;
  /** Whether MLX skips its buffer heap (and that heap's residency): the device name is exactly "Apple Paravirtual device". */
  heapSkipped: boolean;
}

/** An MLX rule-table entry (one per `MlxValues` key). */
export type MlxRule = { [K in keyof MlxValues]: GateRule<K, MlxValues[K]> }[keyof MlxValues];

/** MLX prediction. */
export interface MlxPrediction {
  engine: 'mlx';
  /** The MTLDevice name the prediction is for. */
  deviceName: string;
  residencySets: GateFlag;
  architectureGeneration: Derived<number | null>;
  allocatorLimitBytes: Derived<number | null>;
  heapSkipped: GateFlag;
  warnings: string[];
}

/** How MLX names the GPU class by the architecture name's last letter. */
const MLX_ARCH_CLASS: Readonly<Record<string, string>> = Object.freeze({
  p: 'phone',
  g: 'base/pro',
  s: 'max',
  d: 'ultra',
});

/** MLX rules (mlx/backend/metal/resident.cpp, device.cpp, allocator.cpp). */
export const MLX_RULES: readonly MlxRule[] = Object.freeze([
  {
    flag: 'residencySets',
    source: 'mlx/backend/metal/resident.cpp ResidencySet::ResidencySet',
    rule: 'supportsFamily(Metal3) AND macOS ≥ 15 (creation failure throws "Unable to construct residency set")',
    families: ['metal3'],
    properties: ['host.osVersion'],
    env: [],
    compute: (ctx: RuleContext): Derived<boolean> => {
      const m3 = ask(ctx.device, 'metal3');
      const mac = macosAtLeast(ctx, RESIDENCY_MIN_MACOS);
      return result(m3.yes && mac.ok, [m3.text, mac.text]);
    },
  },
  {
    flag: 'architectureGeneration',
    source: 'mlx/backend/metal/device.cpp Device::Device',
    rule: 'the two digits before the last character of MLX_METAL_GPU_ARCH (if non-empty) or architecture.name',
    families: [],
    properties: ['architecture'],
    env: ['MLX_METAL_GPU_ARCH'],
    compute: ({ device, env }: RuleContext): Derived<number | null> => {
      const override = env.MLX_METAL_GPU_ARCH;
      const reported = typeof device.architecture === 'string' ? device.architecture : null;
      // MLX falls back to the device when the variable is empty, not only when it is unset.
      const useOverride = override !== undefined && override !== '';
      const arch = useOverride ? override : reported;
      const origin = useOverride
        ? `MLX_METAL_GPU_ARCH=${JSON.stringify(override)} overrides architecture.name=${reported === null ? 'unknown' : JSON.stringify(reported)}`
        : `architecture.name=${reported === null ? 'unknown' : JSON.stringify(reported)}${override === '' ? ' (MLX_METAL_GPU_ARCH empty, ignored)' : ''}`;
      if (arch === null) {
        return result(null, [
          origin,
          'not in this report (architecture.name needs macOS 14+); MLX reads it itself at init',
        ]);
      }
      const tens = arch.length >= 3 ? arch.charAt(arch.length - 3) : '';
      const ones = arch.length >= 3 ? arch.charAt(arch.length - 2) : '';
      if (!/^\d$/.test(tens) || !/^\d$/.test(ones)) {
        // MLX maps each non-digit to 0, so its own number would be meaningless here.
        return result(null, [origin, 'no two digits before the last character; MLX would count each non-digit as 0']);
      }
      const cls = MLX_ARCH_CLASS[arch.charAt(arch.length - 1)];
      const clsText =
        cls === undefined
          ? `class ${JSON.stringify(arch.charAt(arch.length - 1))} unknown (MLX uses medium defaults)`
          : `class ${cls}`;
      return result(Number(tens) * 10 + Number(ones), [origin, clsText]);
    },
  },
  {
    flag: 'allocatorLimitBytes',
    source: 'mlx/backend/metal/allocator.cpp MetalAllocator::MetalAllocator',
    rule: 'gc limit = min(floor(0.95 × recommendedMaxWorkingSetSize), block limit), block limit = floor(min(1.5 × recommendedMaxWorkingSetSize, 0.95 × hw.memsize)): past it MLX frees cached buffers',
    families: [],
    properties: ['recommendedMaxWorkingSetSize', 'host.memoryBytes'],
    env: [],
    compute: ({ device, host }: RuleContext): Derived<number | null> => {
      const wss = device.recommendedMaxWorkingSetSize;
      if (typeof wss !== 'number' || !Number.isFinite(wss) || wss < 0) {
        return result(null, ['recommendedMaxWorkingSetSize unknown']);
      }
      const ram = host?.memoryBytes;
      const ramKnown = typeof ram === 'number' && Number.isFinite(ram) && ram > 0;
      // MLX truncates each double to size_t: the block limit as min(double, double), the gc term on its own.
      const gcTerm = Math.floor(0.95 * wss);
      const blockLimit = Math.floor(ramKnown ? Math.min(1.5 * wss, 0.95 * ram) : 1.5 * wss);
      const value = Math.min(gcTerm, blockLimit);
      const parts = [
        `recommendedMaxWorkingSetSize=${wss} (${(wss / 1048576).toFixed(2)} MiB)`,
        `0.95 × that = ${gcTerm}`,
        `1.5 × that = ${Math.floor(1.5 * wss)}`,
        ramKnown
          ? `hw.memsize=${ram} (${(ram / 1073741824).toFixed(2)} GiB), 0.95 × that = ${Math.floor(0.95 * ram)}`
          : 'hw.memsize unknown: the 0.95 × RAM bound is left out, so the real limit may be lower',
        `gc limit = ${value}`,
      ];
      return result(value, parts);
    },
  },
  {
    flag: 'heapSkipped',
    source: 'mlx/backend/metal/allocator.cpp MetalAllocator::MetalAllocator (is_vm)',
    rule: 'name == "Apple Paravirtual device" (exactly; the name as patched, so a profile\'s deviceName changes it): MLX creates no buffer heap, and so no residency for one',
    families: [],
    properties: ['name', 'host.model', 'host.isVirtualMachine'],
    env: [],
    compute: ({ device, host }: RuleContext): Derived<boolean> => {
      const value = device.name === PARAVIRTUAL_DEVICE_NAME;
      const why = value
        ? 'MLX knows it is in a VM from the name and skips its heap there on purpose (a profile with deviceName changes the name)'
        : isVmHost(host, device)
          ? "in this VM MLX creates its heap and adds it to its residency set: the name no longer tells it it is in a VM, and it skips the heap there on purpose (doctor's heap probe tests that path)"
          : 'MLX creates its heap and adds it to its residency set';
      return result(value, [
        `name ${JSON.stringify(device.name)} ${value ? 'is' : 'is not'} ${JSON.stringify(PARAVIRTUAL_DEVICE_NAME)}`,
        why,
      ]);
    },
  },
]);

function mlxRule<K extends keyof MlxValues>(flag: K): GateRule<K, MlxValues[K]> {
  const rule = MLX_RULES.find((r) => r.flag === flag);
  if (rule === undefined) throw new Error(`MLX_RULES has no entry for ${flag}`);
  return rule as GateRule<K, MlxValues[K]>;
}

/** Predicts MLX's init-time values for the device in `ctx`. */
export function predictMlx(ctx: RuleContext): MlxPrediction {
  const { device, host } = ctx;
  const residencySets = mlxRule('residencySets').compute(ctx);
  const architectureGeneration = mlxRule('architectureGeneration').compute(ctx);
  const allocatorLimitBytes = mlxRule('allocatorLimitBytes').compute(ctx);
  const heapSkipped = mlxRule('heapSkipped').compute(ctx);

  const warnings = nullFamilyWarnings(MLX_RULES, device);
  if (residencySets.value && namedParavirtual(device)) {
    warnings.push(
      'advertising metal3 makes MLX create residency sets; the paravirtual device cannot ("Unable to construct residency set")',
    );
  }
  if (ask(device, 'metal3').yes && isVmHost(host, device)) {
    warnings.push(
      'supportsFamily(Metal3)=YES on a virtual machine: MLX on macOS 15+ then creates residency sets and throws if the VM GPU cannot; answer Apple families only, never Metal3',
    );
  }
  if (device.index !== 0) {
    warnings.push(
      `MLX uses MTLCopyAllDevices()[0]; this report is device ${device.index} (${JSON.stringify(device.name)}), which MLX does not pick`,
    );
  }
  return {
    engine: 'mlx',
    deviceName: device.name,
    residencySets,
    architectureGeneration,
    allocatorLimitBytes,
    heapSkipped,
    warnings,
  };
}
