/**
 * `probe --short`: one line per device, as `nvidia-smi -L` gives one per GPU. Loaded only with --short, so plain
 * `probe` never loads the gate tables.
 */
import { planPatch, type PlanRefusalReason } from '../patch/plan.js';
import { familyLabel } from '../core/families.js';
import { predictChecked } from '../engines/index.js';
import { inert } from '../core/escape.js';
import type { Profile } from '../patch/profiles.js';
import { hostOf } from '../device/report.js';
import { architectureText } from '../core/words.js';
import type { DeviceReport, SupportedReport } from '../device/types.js';

/** llama.cpp's three gates, as the short line names them. */
const GATES = [
  ['has_simdgroup_reduction', 'reduction'],
  ['has_simdgroup_mm', 'mm'],
  ['has_bfloat', 'bfloat'],
] as const;

const family = (d: DeviceReport) => (d.highestAppleFamily ? familyLabel(d.highestAppleFamily.name) : 'no Apple family');
const size = (n: number | null) => (n === null ? 'unknown' : n % 1024 === 0 ? `${n / 1024} KiB` : `${n} bytes`);
const yesNo = (v: boolean | null) => (v === null ? 'unknown' : v ? 'yes' : 'no');
const change = <T>(from: T, to: T, show: (v: T) => string) =>
  from === to ? show(from) : `${show(from)} → ${show(to)}`;

/** Why the plan refused, in the words of the short line. */
const REFUSED: Record<PlanRefusalReason, string> = {
  'host-unknown': "this host's chip is unknown",
  'refused-bare-metal': 'not a VM',
  'mlx-architecture-refused': 'its MLX architecture',
  'above-hardware': 'threadgroup memory above every Apple GPU (--allow-above-hardware)',
};

/**
 * Each device on one line: name, highest Apple family stock → under the profile, threadgroup memory, the GPU
 * architecture it reports (→ the one the profile offers MLX as MLX_METAL_GPU_ARCH), VM or not, and llama.cpp's three
 * gates stock → patched. Where the profile would be refused (it raises answers on a host that is not a VM), the line
 * says so and shows the stock values only.
 */
export function formatShort(
  untrusted: SupportedReport,
  profile: Profile,
  env: NodeJS.ProcessEnv = process.env,
  allowAboveHardware = false,
): string {
  const report = inert(untrusted);
  const host = hostOf(report);
  // The same decision as apply, audit and exec: bound to the host ('host' values), refused where they would refuse.
  const plan = planPatch(report, profile, { force: false, allowAboveHardware, env });
  const { expected } = plan;
  const refused = !plan.accepted;
  // A fallback (host-family on a host whose chip is unknown) is named with what it fell back to.
  const requested = profile.name ?? 'custom profile';
  const name = plan.profile.name !== profile.name ? `${requested} → ${plan.profile.name ?? 'custom'}` : requested;
  // The report was checked as it was read: the predictions take it unchecked, under the newest rules.
  const newest = { host, env, rules: 'current', release: null } as const;
  const vm = host.isVirtualMachine === null ? 'VM: unknown' : host.isVirtualMachine ? 'VM' : 'not a VM';
  return report.devices
    .map((stock, i) => {
      const patched = refused ? stock : expected[i]!;
      const before = predictChecked(stock, 'llama.cpp', newest);
      const after = predictChecked(patched, 'llama.cpp', newest);
      const gates = GATES.map(
        ([flag, label]) => `${label} ${change(before.flags[flag].value, after.flags[flag].value, yesNo)}`,
      );
      const families = refused
        ? `${family(stock)} (${name} refused: ${REFUSED[plan.reason]})`
        : `${change(family(stock), family(patched), (f) => f)} (${name})`;
      const offered = refused ? null : plan.mlxArchitecture;
      const architecture = `architecture ${architectureText(stock.architecture)}${offered === null ? '' : ` → ${offered} (MLX)`}`;
      return [
        `${stock.index}${stock.isDefault ? '*' : ''}: ${stock.name}`,
        families,
        `threadgroup memory ${change(stock.maxThreadgroupMemoryLength, patched.maxThreadgroupMemoryLength, size)}`,
        architecture,
        vm,
        `llama.cpp ${gates.join(', ')}`,
      ].join(' · ');
    })
    .join('\n');
}
