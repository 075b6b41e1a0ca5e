// The engine warnings of a plan (lib/patch/engine-warnings.ts): llama.cpp tuning for another chip than the host's,
// MLX's heap in a VM, and MLX switches a release does not read. Over recorded snapshots and hosts edited from them;
// each condition from both sides. The messages are pinned in __snapshots__/engine-warnings.test.ts.snap.
import { describe, expect, it } from 'vitest';
import { probeSnapshot } from '../../lib/device/probe.js';
import type { DeviceReport, HostInfo } from '../../lib/device/types.js';
import type { Engine, EnvMap } from '../../lib/engines/index.js';
import { engineWarnings, type EngineWarningContext } from '../../lib/patch/engine-warnings.js';
import { planProfile, resolveProfile, type ProfileInput } from '../../lib/patch/profiles.js';

const GUEST = 'vz-guest-m1-ultra-tahoe-stock';
const BARE = 'm1-ultra-bare-metal';
const TWO_GPUS = 'macbookpro16-intel-amd-two-gpus';

function stockOf(snapshot: string): { devices: DeviceReport[]; host: HostInfo | null } {
  const r = probeSnapshot(snapshot, { allDevices: true });
  if (!r.supported) throw new Error(snapshot);
  return r;
}

interface Case {
  snapshot: string;
  profile: ProfileInput;
  host?: Partial<HostInfo>;
  engines?: Engine[];
  env?: EnvMap;
  mlx?: Partial<EngineWarningContext['mlx']>;
  offerIgnoredWarned?: boolean;
  claimsAboveHost?: boolean;
}

/** The warnings of `profile` on a snapshot (its host edited by `host`), as planPatch asks for them. */
function warn(c: Case) {
  const stock = stockOf(c.snapshot);
  const host = stock.host === null ? null : { ...stock.host, ...c.host };
  const { expected } = planProfile(stock.devices, resolveProfile(c.profile));
  return engineWarnings(stock.devices, expected, {
    engines: c.engines ?? ['llama.cpp', 'mlx'],
    env: c.env ?? {},
    host,
    rules: 'current',
    release: null,
    mlx: { release: undefined, architectureName: null, ...c.mlx },
    offerIgnoredWarned: c.offerIgnoredWarned ?? false,
    claimsAboveHost: c.claimsAboveHost ?? false,
  });
}

const codes = (c: Case) => warn(c).map((w) => w.code);

/** Both engines, the newest rules, no environment, nothing offered, no host. */
const CONTEXT: EngineWarningContext = {
  engines: ['llama.cpp', 'mlx'],
  env: {},
  host: null,
  rules: 'current',
  release: null,
  mlx: { release: undefined, architectureName: null },
  offerIgnoredWarned: false,
  claimsAboveHost: false,
};
const renamedProfile = { deviceName: 'Apple M1' };

describe('llama.cpp tuned for another chip', () => {
  it("none where the claim gives the host chip's own tuning (Apple7 on an M1 Ultra guest)", () => {
    expect(warn({ snapshot: GUEST, profile: 'apple7' })).toEqual([]);
  });

  it("a family below the host's (Apple7 on an M3 Max guest): tuned for the M1s, not this host's M3 Max", () => {
    const w = warn({ snapshot: GUEST, profile: 'apple7', host: { chip: 'Apple M3 Max' } });
    expect(w.map((x) => x.code)).toEqual(['tuned-for-other-chip']);
    expect(w[0]!.message).toMatchSnapshot();
  });

  it('left to above-host-family where the claim is above the host (one warning per fact)', () => {
    const args = { snapshot: GUEST, profile: 'apple7' as const, host: { chip: 'Apple M3 Max' } };
    expect(codes({ ...args, claimsAboveHost: true })).toEqual([]);
  });

  it("a guest whose chip is unknown: the tuning may be for another chip, and the message says the chip's unknown", () => {
    const w = warn({ snapshot: GUEST, profile: 'apple7', host: { chip: null } });
    expect(w.map((x) => x.code)).toEqual(['tuned-for-other-chip']);
    expect(w[0]!.message).toMatchSnapshot();
  });

  it("bare metal without an Apple chip: the default GPU is no chip llama.cpp tunes for (the MacBook Pro's AMD)", () => {
    const w = warn({ snapshot: TWO_GPUS, profile: 'apple7' });
    expect(w.map((x) => x.code)).toEqual(['tuned-for-other-chip']);
    expect(w[0]!.message).toMatchSnapshot();
  });

  it("bare metal with an unrecorded host chip reads it from the device's name (the M1 Ultra): its own tuning, none", () => {
    expect(codes({ snapshot: BARE, profile: 'apple7', host: { chip: null } })).toEqual([]);
  });

  it("bare metal with an unrecorded host chip names the device's own, the M1 Ultra (Apple9's tuning claimed)", () => {
    // claimsAboveHost false: the warning as it would be where above-host-family is not given.
    const w = warn({ snapshot: BARE, profile: 'apple9-hw-tg', host: { chip: null } });
    expect(w.map((x) => x.code)).toEqual(['tuned-for-other-chip']);
    expect(w[0]!.message).toMatchSnapshot();
  });

  it('no host at all: the chip is read from the device name, the M1 Ultra, as with an unrecorded one', () => {
    const stock = stockOf(BARE);
    const context = { ...CONTEXT, host: null };
    expect(engineWarnings(stock.devices, stock.devices, context)).toEqual([]);
    const { expected } = planProfile(stock.devices, resolveProfile('apple9-hw-tg'));
    expect(engineWarnings(stock.devices, expected, context)).toEqual(
      warn({ snapshot: BARE, profile: 'apple9-hw-tg', host: { chip: null } }),
    );
  });

  it('a host chip whose family is not known yet (an M9): never its own tuning, so the claimed one is named', () => {
    const w = warn({ snapshot: GUEST, profile: 'apple7', host: { chip: 'Apple M9' } });
    expect(w.map((x) => x.code)).toEqual(['tuned-for-other-chip']);
    expect(w[0]!.message).toMatchSnapshot();
  });

  it("unchanged tuning that is not the host's own is not this profile's doing: none (the M1 Ultra's on an M3 Max)", () => {
    expect(
      codes({ snapshot: BARE, profile: { maxThreadgroupMemoryLength: 16384 }, host: { chip: 'Apple M3 Max' } }),
    ).toEqual([]);
  });

  it('no change of tuning (the stock answers), a baseline tuning (Apple5 masked), or llama.cpp not asked: none', () => {
    expect(codes({ snapshot: GUEST, profile: { appleFamilyMax: 1005 }, host: { chip: 'Apple M3 Max' } })).toEqual([]);
    expect(codes({ snapshot: BARE, profile: 'mask-apple5', host: { chip: 'Apple M3 Max' } })).toEqual([]);
    expect(codes({ snapshot: GUEST, profile: 'apple7', host: { chip: 'Apple M3 Max' }, engines: ['mlx'] })).toEqual([]);
  });
});

describe("MLX's heap and the switches a release ignores", () => {
  const renamed = { deviceName: 'Apple M1' };

  it('heap-in-vm where a profile renames the paravirtual device; not without a name, not on bare metal', () => {
    const w = warn({ snapshot: GUEST, profile: renamed });
    expect(w.map((x) => x.code)).toEqual(['heap-in-vm']);
    expect(w[0]!.message).toMatchSnapshot();
    expect(codes({ snapshot: GUEST, profile: 'apple7' })).toEqual([]);
    expect(codes({ snapshot: BARE, profile: renamed })).toEqual([]);
    expect(codes({ snapshot: GUEST, profile: renamed, engines: ['llama.cpp'] })).toEqual([]);
  });

  it('a release without the heap (before v0.23.2) creates none under any name: no heap-in-vm', () => {
    expect(codes({ snapshot: GUEST, profile: renamed, mlx: { release: 'v0.19.2' } })).toEqual([]);
  });

  it('a switch set for a release that reads it only later is ignored; one it reads is not', () => {
    const env = { MLX_SDPA_BLOCKS: '64' };
    const w = warn({ snapshot: GUEST, profile: 'apple7', env, mlx: { release: 'v0.31.0' } });
    expect(w.map((x) => x.code)).toEqual(['mlx-switch-ignored']);
    expect(w[0]!.message).toMatchSnapshot();
    expect(codes({ snapshot: GUEST, profile: 'apple7', env, mlx: { release: '0.32.2' } })).toEqual([]);
    expect(codes({ snapshot: GUEST, profile: 'apple7', env: {}, mlx: { release: 'v0.31.0' } })).toEqual([]);
  });

  it('the architecture predicted, for a release that ignores it: warned here unless the plan already said so', () => {
    const c: Case = {
      snapshot: GUEST,
      profile: 'apple7',
      mlx: { release: 'v0.30.6', architectureName: 'applegpu_g13d' },
    };
    const w = warn(c);
    expect(w.map((x) => x.code)).toEqual(['mlx-switch-ignored']);
    expect(w[0]!.message).toMatchSnapshot();
    expect(codes({ ...c, offerIgnoredWarned: true })).toEqual([]);
    // Only the architecture is left to the plan: a switch of the user's is still warned about.
    expect(codes({ ...c, offerIgnoredWarned: true, env: { MLX_SDPA_BLOCKS: '64' } })).toEqual(['mlx-switch-ignored']);
  });
});

describe('which device each engine is asked about', () => {
  it("llama.cpp's is the default device, MLX's device 0: on the MacBook Pro, the AMD (default) and the Intel", () => {
    const stock = stockOf(TWO_GPUS);
    expect(stock.devices.map((d) => [d.index, d.isDefault])).toEqual([
      [0, false],
      [1, true],
    ]);
    // The tuning warning names the default device, the AMD.
    expect(warn({ snapshot: TWO_GPUS, profile: 'apple7' })[0]!.message).toContain('AMD Radeon Pro 5500M');
  });

  it('MLX asks device 0 wherever it is in the list: the paravirtual device listed after another GPU', () => {
    const paravirtual = stockOf(GUEST).devices[0]!;
    const amd = { ...stockOf(TWO_GPUS).devices[1]!, index: 1, isDefault: false };
    const devices = [amd, paravirtual];
    const { expected } = planProfile(devices, resolveProfile(renamedProfile));
    const context = { ...CONTEXT, host: stockOf(GUEST).host, engines: ['mlx'] as Engine[] };
    expect(engineWarnings(devices, expected, context).map((w) => w.code)).toEqual(['heap-in-vm']);
  });

  it('no device: no warning', () => {
    expect(engineWarnings([], [], CONTEXT)).toEqual([]);
  });
});
