// planPatch's above-hardware refusal: a threadgroup claim the llama.cpp release that will run would turn into a
// request above the 32768 bytes every Apple GPU has is refused, naming the kernel and the size; only
// allowAboveHardware lifts it (force does not), and host-family, which claims no threadgroup memory, never meets it.
import { describe, expect, it } from 'vitest';
import { loadSnapshot, reportFromSnapshot } from '../../lib/device/snapshots.js';
import type { SupportedReport } from '../../lib/device/types.js';
import { parseRelease, type LlamaCppRuleSet } from '../../lib/engines/index.js';
import {
  ABOVE_HARDWARE_REFERENCE,
  aboveHardwareRuleSets,
  allowsAboveHardware,
  planPatch,
  refusedError,
  type PlanOptions,
} from '../../lib/patch/plan.js';
import { resolveProfile } from '../../lib/patch/profiles.js';

const stockOf = (id: string): SupportedReport => {
  const r = reportFromSnapshot(loadSnapshot(id), { allDevices: true });
  if (!r.supported) throw new Error(id);
  return r;
};
const GUEST = stockOf('vz-guest-m1-ultra-tahoe-stock');
const plan = (spec: unknown, options: Partial<PlanOptions> = {}) =>
  planPatch(GUEST, resolveProfile(spec), { force: false, ...options });
const decision = (p: ReturnType<typeof plan>) => [p.accepted, p.reason];
const APPLE10_64K = '{"appleFamilyMax": 1010, "maxThreadgroupMemoryLength": 65536}';
const legacyRefusal =
  "refusing the profile for llama.cpp b4562 to b6500 (ggml-metal.m) (legacy rules): its threadgroup memory claim makes MUL_MAT_ID mul_mm_id, up to 14328 expert rows: 65504 bytes (and 6 more configurations), above the 32768 bytes every Apple GPU has. Use a profile that keeps threadgroup memory at 32768 (apple9-hw-tg), name the release that will run (audit: --release or --rules), or pass { allowAboveHardware: true } (CLI: --allow-above-hardware; register and exec's environment: METAL_CAP_SHIM_ALLOW_ABOVE_HARDWARE=1) to apply it anyway.";

describe('cua-release (Apple9, 65536 bytes) on the stock guest, by the release that will run', () => {
  it('legacy rules (ggml-metal.m, read at b4753): refused, naming the largest request', () => {
    const p = plan('cua-release', { rules: 'legacy' });
    expect([p.accepted, p.reason, p.detail]).toEqual([false, 'above-hardware', legacyRefusal]);
    expect(refusedError('above-hardware', legacyRefusal).code).toBe('ERR_ABOVE_HARDWARE');
  });

  it('force does not lift it; allowAboveHardware does, and nothing else changes', () => {
    expect(decision(plan('cua-release', { rules: 'legacy', force: true }))).toEqual([false, 'above-hardware']);
    const allowed = plan('cua-release', { rules: 'legacy', allowAboveHardware: true });
    const refused = plan('cua-release', { rules: 'legacy' });
    expect(decision(allowed)).toEqual([true, null]);
    expect([allowed.profile, allowed.changes, allowed.warnings]).toEqual([
      refused.profile,
      refused.changes,
      refused.warnings,
    ]);
  });

  it('from b5328 the largest is flash attention, MUL_MAT_ID no longer bounded by the claim', () => {
    const p = plan('cua-release', { rules: 'legacy', release: { text: 'b6000', warning: null } });
    expect(p.detail).toContain(
      'makes FLASH_ATTN_EXT half8x8, head 256/256, batch 4 to 8, 512 or more KV entries: 57344 bytes (and 5 more configurations)',
    );
  });

  it.each<[LlamaCppRuleSet, boolean]>([
    ['legacy-b0', true],
    ['legacy-b1853', false],
    ['legacy-b4053', true],
    ['legacy', false],
    ['device-b6501', true],
    ['device', true],
    ['chip-tuning', true],
    ['current', true],
  ])(
    '%s: accepted %s (b3658 and b4753 size from it; device rule sets only assert; v0.4/v0.5 tune no Q=4 here)',
    (rules, ok) => {
      expect(plan('cua-release', { rules }).accepted).toBe(ok);
    },
  );

  it('the newest rules by default: accepted, as every command assumes before the release is known', () => {
    expect(decision(plan('cua-release'))).toEqual([true, null]);
    expect(parseRelease('v0.5.0')).not.toBeNull();
  });
});

describe('a claim of Apple10 and 65536 bytes under v0.5.0, whose Apple10 table picks Q=4 at head 576', () => {
  it('refused under the newest rules, with the 57344-byte head 576 request named', () => {
    const p = plan(APPLE10_64K);
    expect(decision(p)).toEqual([false, 'above-hardware']);
    expect(p.detail).toContain(
      'makes FLASH_ATTN_EXT vec, head 576/512, KV F16, batch 1 (decode), 4097 to 16383 KV entries: 57344 bytes (and 25 more configurations)',
    );
  });

  it('the same families at 32768 bytes: accepted (llama.cpp falls back to Q=1 itself)', () => {
    expect(decision(plan('{"appleFamilyMax": 1010, "maxThreadgroupMemoryLength": 32768}'))).toEqual([true, null]);
  });
});

describe('profiles that claim no threadgroup memory above the hardware are never refused for it', () => {
  it.each(['host-family', 'apple9-hw-tg', 'apple7', 'mask-apple5', 'host'])('%s', (name) => {
    for (const rules of ['legacy', 'current'] as const) expect(plan(name, { rules }).reason).not.toBe('above-hardware');
    expect(aboveHardwareRuleSets(resolveProfile(name))).toEqual([]);
  });

  it('cua-release is refused for the two ggml-metal.m rule sets whose reads were read, on the reference guest', () => {
    expect([ABOVE_HARDWARE_REFERENCE, aboveHardwareRuleSets(resolveProfile('cua-release'))]).toEqual([
      'vz-guest-m1-ultra-tahoe-stock',
      ['legacy-b1853', 'legacy'],
    ]);
  });
});

describe('allowsAboveHardware: the one reader of METAL_CAP_SHIM_ALLOW_ABOVE_HARDWARE', () => {
  it('only "1" lifts it', () => {
    const read = (v: string | undefined) => allowsAboveHardware({ METAL_CAP_SHIM_ALLOW_ABOVE_HARDWARE: v });
    expect([read('1'), read('0'), read('true'), read(''), read(undefined), read(' 1')]).toEqual([
      true,
      false,
      false,
      false,
      false,
      false,
    ]);
  });
});
