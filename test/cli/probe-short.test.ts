// lib/cli/probe-short.ts: `probe --short`, one line per device, under the same plan apply, audit and exec make. Each
// bundled snapshot's lines are pinned whole; the behaviour is checked by the rule: a guest is raised, bare metal under
// a raising profile is refused with the stock values, a profile that raises nothing changes nothing.
import { describe, expect, it } from 'vitest';
import { formatShort } from '../../lib/cli/probe-short.js';
import { probeSnapshot } from '../../lib/device/probe.js';
import { listSnapshots } from '../../lib/device/snapshots.js';
import { DEFAULT_PROFILE, resolveProfile } from '../../lib/patch/profiles.js';

const short = (snapshot: string, profile: string = DEFAULT_PROFILE) => {
  const report = probeSnapshot(snapshot, { allDevices: true });
  if (!report.supported) throw new Error(`${snapshot} is not supported`);
  return formatShort(report, resolveProfile(profile as never), {});
};

describe('formatShort', () => {
  it.each(listSnapshots())('%s under the default profile: one line per device, pinned', (snapshot) => {
    const lines = short(snapshot).split('\n');
    expect(lines).toHaveLength(probeSnapshot(snapshot, { allDevices: true }).devices.length);
    expect(lines.filter((l) => /^\d+\*: /.test(l))).toHaveLength(1);
    expect(lines).toMatchSnapshot();
  });

  it('a stock guest is raised: family, gates and the architecture offered to MLX, each stock → patched', () => {
    expect(short('vz-guest-m1-ultra-tahoe-stock')).toBe(
      '0*: Apple Paravirtual device · Apple5 → Apple7 (host-family) · threadgroup memory 32 KiB · architecture unrecorded → applegpu_g13d (MLX) · VM · llama.cpp reduction no → yes, mm no → yes, bfloat no → yes',
    );
  });

  it('bare metal under a raising profile: refused, saying why, with the stock values only', () => {
    expect(short('m1-ultra-bare-metal', 'cua-release')).toBe(
      '0*: Apple M1 Ultra · Apple7 (cua-release refused: not a VM) · threadgroup memory 32 KiB · architecture applegpu_g13d · not a VM · llama.cpp reduction yes, mm yes, bfloat yes',
    );
  });

  it('a claim the newest rules size above every Apple GPU: refused, unless --allow-above-hardware', () => {
    const report = probeSnapshot('vz-guest-m1-ultra-tahoe-stock', { allDevices: true });
    if (!report.supported) throw new Error('the stock guest is not supported');
    const apple10 = resolveProfile('{"appleFamilyMax": 1010, "maxThreadgroupMemoryLength": 65536}');
    expect([formatShort(report, apple10, {}), formatShort(report, apple10, {}, true)]).toEqual([
      '0*: Apple Paravirtual device · Apple5 (custom profile refused: threadgroup memory above every Apple GPU (--allow-above-hardware)) · threadgroup memory 32 KiB · architecture unrecorded · VM · llama.cpp reduction no, mm no, bfloat no',
      '0*: Apple Paravirtual device · Apple5 → Apple10 (custom profile) · threadgroup memory 32 KiB → 64 KiB · architecture unrecorded · VM · llama.cpp reduction no → yes, mm no → yes, bfloat no → yes',
    ]);
  });

  it('bare metal under the default, which raises nothing there: the same answers, no arrows', () => {
    expect(short('m1-ultra-bare-metal')).not.toContain('→');
  });
});
