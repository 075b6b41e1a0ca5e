/**
 * The warnings a profile earns from what the engines do with its answers: llama.cpp tuning for another chip than the
 * host's, MLX creating the buffer heap it skips in a VM, and MLX switches the release does not read. Part of the plan
 * (planPatch), so that audit, applyProfile, exec, bench and doctor warn alike; audit shows the same predictions.
 */
import { chipFamily } from '../device/chips.js';
import { isVmHost } from '../device/paravirtual.js';
import type { DeviceReport, HostInfo } from '../device/types.js';
import { FAMILY_VALUES } from '../core/families.js';
import {
  chipOfName,
  parseMacos,
  predictLlamaCpp,
  predictMlx,
  tuningFor,
  tuningPhrase,
  type Engine,
  type EnvMap,
  type LlamaCppRuleSet,
  type RuleContext,
  type ValidOptions,
} from '../engines/index.js';
import { MLX_ARCHITECTURE_ENV } from '../engines/mlx-architecture.js';
import type { ApplyWarning } from './warning.js';

/** What the predictions behind the warnings are made with. */
export interface EngineWarningContext {
  /** The engines warned about. */
  engines: readonly Engine[];
  env: EnvMap;
  host: HostInfo | null;
  rules: LlamaCppRuleSet;
  /** The llama.cpp release asked for, parsed (audit's `release`); null: the rules alone. */
  release: ValidOptions['release'];
  /** MLX's release (checked), and the architecture its patched side is predicted with. */
  mlx: { release: string | undefined; architectureName: string | null };
  /** The plan already warned that this MLX release ignores the offered architecture (mlx-architecture-ignored). */
  offerIgnoredWarned: boolean;
  /** The profile claims a family above the host's: `above-host-family` already names llama.cpp's tuning. */
  claimsAboveHost: boolean;
}

/** What an engine's rules read of a device, on this host, in this environment. */
function contextOf(device: DeviceReport, c: EngineWarningContext): RuleContext {
  return { device, env: c.env, host: c.host, macos: parseMacos(c.host) };
}

/**
 * llama.cpp v0.4+ picks its flash-attention kernels by chip and GPU family, so a profile can make it tune for a chip
 * other than the host's. The host's chip is `host.chip` (a guest's brand string names its host's), else the stock
 * device's name where llama.cpp knows it (bare metal). One warning per fact: where the claimed family is above the
 * chip's, `above-host-family` already names the tuning, and this one is left out. llama.cpp uses the default device.
 */
function tuningWarnings(main: DeviceReport, patched: DeviceReport, c: EngineWarningContext): ApplyWarning[] {
  const llama = {
    before: predictLlamaCpp(contextOf(main, c), c.rules, c.release),
    after: predictLlamaCpp(contextOf(patched, c), c.rules, c.release),
  };
  const before = llama.before.tuning;
  const after = llama.after.tuning;
  if (before === null || after === null || c.claimsAboveHost) return [];
  if (JSON.stringify(before.value) === JSON.stringify(after.value) || after.value.tier === 'baseline') return [];
  const family = llama.after.flags.gpu_family.value;
  const lead = `llama.cpp ${llama.before.releases}: with Apple${family} claimed, flash attention is tuned ${tuningPhrase(after.value)}`;
  const stockText = `stock tuning: ${tuningPhrase(before.value)}`;
  const hostChip = c.host?.chip ?? (chipOfName(main.name) === null ? null : main.name);
  const trueFamily = chipFamily(hostChip);
  if (hostChip !== null) {
    const own = trueFamily === null ? null : tuningFor(c.rules, hostChip, trueFamily - FAMILY_VALUES.apple1 + 1)!;
    // The host's own tuning: exactly what the host's name and true family give.
    if (own !== null && JSON.stringify(own.value) === JSON.stringify(after.value)) return [];
    return [{ code: 'tuned-for-other-chip', message: `${lead}, not for this host's ${hostChip}; ${stockText}` }];
  }
  const where = isVmHost(c.host, main)
    ? "this host's chip is unknown (its brand string names no Apple chip, or was not recorded)"
    : `the host's GPU (${main.name}) is no chip llama.cpp tunes for`;
  return [
    {
      code: 'tuned-for-other-chip',
      message: `${lead}; ${stockText}; ${where}, so that tuning may be for another chip`,
    },
  ];
}

/**
 * MLX skips its buffer heap when the device is named exactly "Apple Paravirtual device", on purpose: a profile whose
 * deviceName renames that device makes MLX create the heap in a VM. Then the switches MLX's release ignores: one set
 * in the environment, or the architecture predicted (unless the plan already said the release ignores its offer).
 */
function mlxWarnings(stock: DeviceReport, patched: DeviceReport, c: EngineWarningContext): ApplyWarning[] {
  // The stock side is MLX on the device's own architecture name; the patched side sees the one predicted with.
  const mlx = {
    before: predictMlx(contextOf(stock, c), { release: c.mlx.release, architectureName: null }),
    after: predictMlx(contextOf(patched, c), c.mlx),
  };
  const heap: ApplyWarning[] =
    mlx.before.flags.heapSkipped.value === true && mlx.after.flags.heapSkipped.value !== true
      ? [
          {
            code: 'heap-in-vm',
            message: `MLX: the device answers ${JSON.stringify(mlx.after.deviceName)} instead of ${JSON.stringify(mlx.before.deviceName)}, so in this VM MLX creates the buffer heap it skips there on purpose and adds it to its residency set; check it with doctor's heap probe, or leave deviceName null where MLX runs`,
          },
        ]
      : [];
  const ignored = mlx.after.ignored
    .filter((i) => !(c.offerIgnoredWarned && i.name === MLX_ARCHITECTURE_ENV))
    .map((i) => ({ code: 'mlx-switch-ignored' as const, message: i.message }));
  return [...heap, ...ignored];
}

/** The engine warnings of a profile whose devices answer `expected` where they answer `stock` now. */
export function engineWarnings(
  stock: readonly DeviceReport[],
  expected: readonly DeviceReport[],
  c: EngineWarningContext,
): ApplyWarning[] {
  const warnings: ApplyWarning[] = [];
  const mainIndex = Math.max(
    0,
    stock.findIndex((d) => d.isDefault),
  );
  const main = stock[mainIndex];
  if (main !== undefined && c.engines.includes('llama.cpp')) {
    warnings.push(...tuningWarnings(main, expected[mainIndex]!, c));
  }
  // MLX uses MTLCopyAllDevices()[0].
  const first = stock.findIndex((d) => d.index === 0);
  if (first !== -1 && c.engines.includes('mlx')) {
    warnings.push(...mlxWarnings(stock[first]!, expected[first]!, c));
  }
  return warnings;
}
