// planPatch's one decision about mlxArchitecture (decideMlxArchitecture): what the profile offers MLX as
// MLX_METAL_GPU_ARCH on a host, bound from the host's chip, bounded by the host's GPU generation, and never where it
// would turn on MLX's NAX kernels; and mlxArchitectureEnv, which decides what a program's environment gets.
import { describe, expect, it } from 'vitest';
import { loadSnapshot, reportFromSnapshot } from '../../lib/device/snapshots.js';
import { chipFromBrand } from '../../lib/device/chips.js';
import type { DeviceReport, HostInfo, SupportedReport } from '../../lib/device/types.js';
import { mlxArchitectureEnv, planPatch, type ApplyWarning } from '../../lib/patch/plan.js';
import { resolveProfile } from '../../lib/patch/profiles.js';

const stockOf = (id: string): SupportedReport => {
  const r = reportFromSnapshot(loadSnapshot(id));
  if (!r.supported) throw new Error(id);
  return r;
};
const GUEST = stockOf('vz-guest-m1-ultra-tahoe-stock');
const BARE = stockOf('m1-ultra-bare-metal');

/** The stock guest, on another host chip and macOS, its default device reporting `architecture`. */
function guestOn(brand: string | null, osVersion: string | null, architecture: string | null = null) {
  const host: HostInfo = { ...GUEST.host, cpuBrand: brand, chip: chipFromBrand(brand), osVersion };
  const devices: DeviceReport[] = GUEST.devices.map((d) => ({ ...d, architecture }));
  return { devices, host };
}

const plan = (stock: { devices: DeviceReport[]; host: HostInfo | null }, spec: unknown, mlxRelease?: string) =>
  planPatch(stock, resolveProfile(spec), { force: false, ...(mlxRelease === undefined ? {} : { mlxRelease }) });
const mlxWarnings = (warnings: ApplyWarning[]) => warnings.filter((w) => w.code.startsWith('mlx-'));
const NAX_UNPROVEN = 'no guest has been shown to run them: doctor has no NAX probe';

describe('the default profile offers MLX the host chip’s architecture, on each bundled snapshot', () => {
  it.each([
    ['vz-guest-m1-ultra-tahoe-stock', 'host-family', 'applegpu_g13d'],
    ['github-macos-14-arm64-runner', 'host-family', 'applegpu_g13g'],
    ['vz-guest-m1-ultra-tahoe-stock', 'host', 'applegpu_g13d'],
    ['github-macos-14-arm64-runner', 'host', 'applegpu_g13g'],
    // Bare metal: MLX reads the GPU's own architecture.name; nothing is offered.
    ['m1-ultra-bare-metal', 'host-family', null],
    // An Intel host: the chip is unknown, host-family falls back to apple7, which offers nothing.
    ['macbookpro16-intel-amd-two-gpus', 'host-family', null],
  ])('%s with %s: %j', (id, profile, offered) => {
    const p = plan(stockOf(id), profile);
    expect([p.mlxArchitecture, p.profile.mlxArchitecture ?? null, mlxWarnings(p.warnings)]).toEqual([
      offered,
      offered,
      [],
    ]);
  });

  it('a profile that offers none plans none', () => {
    const p = plan(GUEST, 'cua-release');
    expect([p.accepted, p.mlxArchitecture, 'mlxArchitecture' in p.profile]).toEqual([true, null, false]);
  });

  it('where no device of the host’s chip has been seen to report it, none is offered, and a warning says why', () => {
    const p = plan(guestOn('Apple M1 Pro (Virtual)', '26.5.2'), 'host-family');
    expect([p.accepted, p.mlxArchitecture, p.profile.appleFamilyMax]).toEqual([true, null, 1007]);
    expect(mlxWarnings(p.warnings)).toEqual([
      {
        code: 'mlx-architecture-not-offered',
        message:
          "no GPU architecture is offered to MLX: no Apple M1 Pro has been seen to report its architecture (lib/device/chips.ts CHIP_ARCHITECTURES), so none is offered rather than a guess; MLX reads the device's own architecture.name",
      },
    ]);
    expect(mlxWarnings(plan(guestOn(null, '26.5.2'), { mlxArchitecture: 'host' }).warnings)).toEqual([
      {
        code: 'mlx-architecture-not-offered',
        message:
          "no GPU architecture is offered to MLX: this host's chip is unknown, so none is offered rather than a guess; MLX reads the device's own architecture.name",
      },
    ]);
  });
});

describe('an architecture named in the profile: never above the host’s GPU generation', () => {
  it('the host’s own generation is offered, whatever its class', () => {
    for (const name of ['applegpu_g13d', 'applegpu_g13g', 'applegpu_g13s']) {
      const p = plan(GUEST, { appleFamilyMax: 1007, mlxArchitecture: name });
      expect([p.accepted, p.mlxArchitecture, p.profile.mlxArchitecture]).toEqual([true, name, name]);
    }
  });

  it('a lower generation is offered too', () => {
    expect(
      plan(guestOn('Apple M3 Max (Virtual)', '26.5.2'), { mlxArchitecture: 'applegpu_g13s' }).mlxArchitecture,
    ).toBe('applegpu_g13s');
  });

  it('one generation above is refused, with the reason', () => {
    const p = plan(GUEST, { appleFamilyMax: 1007, mlxArchitecture: 'applegpu_g14g' });
    expect([p.accepted, p.reason, p.detail, p.mlxArchitecture]).toEqual([
      false,
      'mlx-architecture-refused',
      'refusing to offer MLX the GPU architecture applegpu_g14g (MLX_METAL_GPU_ARCH): its generation 14 is above 13, the GPU generation of this host\'s Apple M1 Ultra: MLX would pick kernels tuned for a newer GPU than the one doing the work (mlxArchitecture "host" offers the host\'s own)',
      null,
    ]);
  });

  it('on bare metal too (it is no Metal answer, so force does not matter)', () => {
    const p = planPatch(BARE, resolveProfile({ mlxArchitecture: 'applegpu_g15s' }), { force: true });
    expect([p.accepted, p.reason]).toEqual([false, 'mlx-architecture-refused']);
    expect(plan(BARE, { mlxArchitecture: 'applegpu_g13s' }).mlxArchitecture).toBe('applegpu_g13s');
  });

  it('where the host’s GPU generation is unknown, a name is refused: it cannot be shown not to be above it', () => {
    expect(plan(guestOn(null, '26.5.2'), { mlxArchitecture: 'applegpu_g13g' }).detail).toBe(
      "refusing to offer MLX the GPU architecture applegpu_g13g (MLX_METAL_GPU_ARCH): this host's GPU generation is unknown (its chip is unknown), so applegpu_g13g cannot be shown not to be above it",
    );
    expect(plan(guestOn('Apple M9 (Virtual)', '26.5.2'), { mlxArchitecture: 'applegpu_g13g' }).detail).toBe(
      "refusing to offer MLX the GPU architecture applegpu_g13g (MLX_METAL_GPU_ARCH): this host's GPU generation is unknown (Apple M9 is not in lib/device/chips.ts CHIP_GPU_GENERATIONS), so applegpu_g13g cannot be shown not to be above it",
    );
  });
});

describe('never where it would turn on MLX’s NAX kernels (macOS ≥ 26.2, generation ≥ 17, ≥ 18 for class p)', () => {
  const M5 = 'Apple M5 (Virtual)';

  it('"host" on an M5 guest: offered on macOS 26.1, left out on 26.2 with the reason', () => {
    expect(plan(guestOn(M5, '26.1'), 'host-family').mlxArchitecture).toBe('applegpu_g17g');
    const p = plan(guestOn(M5, '26.2'), 'host-family');
    expect([p.accepted, p.mlxArchitecture, 'mlxArchitecture' in p.profile]).toEqual([true, null, false]);
    expect(mlxWarnings(p.warnings)).toEqual([
      {
        code: 'mlx-architecture-not-offered',
        message: `no GPU architecture is offered to MLX: the host's applegpu_g17g is left out: on macOS 26.2 or later MLX turns on its NAX kernels for GPU generation 17 and later (18 for class p; mlx/backend/metal/device.cpp is_nax_available), so applegpu_g17g turns them on here (macOS 26.2), and ${NAX_UNPROVEN}`,
      },
    ]);
  });

  it('a name on an M5 guest: generation 16 offered, 17 refused on macOS 26.2, 17 offered on 26.1', () => {
    expect(plan(guestOn(M5, '26.2'), { mlxArchitecture: 'applegpu_g16s' }).mlxArchitecture).toBe('applegpu_g16s');
    expect(plan(guestOn(M5, '26.1'), { mlxArchitecture: 'applegpu_g17s' }).mlxArchitecture).toBe('applegpu_g17s');
    const p = plan(guestOn(M5, '26.2'), { mlxArchitecture: 'applegpu_g17s' });
    expect([p.accepted, p.reason, p.detail]).toEqual([
      false,
      'mlx-architecture-refused',
      `refusing to offer MLX the GPU architecture applegpu_g17s (MLX_METAL_GPU_ARCH): on macOS 26.2 or later MLX turns on its NAX kernels for GPU generation 17 and later (18 for class p; mlx/backend/metal/device.cpp is_nax_available), so applegpu_g17s turns them on here (macOS 26.2), and ${NAX_UNPROVEN}`,
    ]);
  });

  it('class p: generation 17 leaves NAX off and is offered; 18 is above an M5’s generation', () => {
    expect(plan(guestOn(M5, '26.2'), { mlxArchitecture: 'applegpu_g17p' }).mlxArchitecture).toBe('applegpu_g17p');
    expect(plan(guestOn(M5, '26.2'), { mlxArchitecture: 'applegpu_g18p' }).detail).toContain(
      'its generation 18 is above 17',
    );
  });

  it('where the macOS version is unknown, generation 17 might turn NAX on: refused, and left out for "host"', () => {
    expect(plan(guestOn(M5, null), { mlxArchitecture: 'applegpu_g17g' }).detail).toBe(
      `refusing to offer MLX the GPU architecture applegpu_g17g (MLX_METAL_GPU_ARCH): this host's macOS version is unknown, so MLX may turn on its NAX kernels for applegpu_g17g, and ${NAX_UNPROVEN}`,
    );
    expect(plan(guestOn(M5, null), 'host-family').mlxArchitecture).toBeNull();
  });

  it('where the device’s own architecture has NAX on already, offering it turns nothing on', () => {
    const p = plan(guestOn(M5, '26.2', 'applegpu_g17g'), { mlxArchitecture: 'applegpu_g17g' });
    expect([p.accepted, p.mlxArchitecture]).toEqual([true, 'applegpu_g17g']);
    // The device's own below 17 (or unknown): it would.
    expect(plan(guestOn(M5, '26.2', 'applegpu_g16g'), { mlxArchitecture: 'applegpu_g17g' }).accepted).toBe(false);
  });
});

describe('a release that ignores it', () => {
  it('MLX before v0.31.0 reads no MLX_METAL_GPU_ARCH: a warning says so where the release is known', () => {
    expect(mlxWarnings(plan(GUEST, 'host-family', '0.30.6').warnings)).toEqual([
      {
        code: 'mlx-architecture-ignored',
        message:
          "MLX 0.30.6 ignores the offered applegpu_g13d: MLX reads MLX_METAL_GPU_ARCH from v0.31.0, so it reads the device's own architecture.name",
      },
    ]);
    expect(mlxWarnings(plan(GUEST, 'host-family', '0.31.0').warnings)).toEqual([]);
    expect(mlxWarnings(plan(GUEST, 'cua-release', '0.30.6').warnings)).toEqual([]);
  });
});

describe('mlxArchitectureEnv: what a program’s environment gets', () => {
  it('the offered architecture where the variable is unset or empty (MLX ignores an empty one)', () => {
    expect(mlxArchitectureEnv('applegpu_g13d', {})).toEqual({ set: 'applegpu_g13d', warning: null });
    expect(mlxArchitectureEnv('applegpu_g13d', { MLX_METAL_GPU_ARCH: '' })).toEqual({
      set: 'applegpu_g13d',
      warning: null,
    });
  });

  it('the user’s own value wins, with a warning; the same value needs none', () => {
    expect(mlxArchitectureEnv('applegpu_g13d', { MLX_METAL_GPU_ARCH: 'applegpu_g13s' })).toEqual({
      set: null,
      warning: {
        code: 'mlx-architecture-user-set',
        message:
          'MLX_METAL_GPU_ARCH is already set to "applegpu_g13s": that value is kept, and the profile\'s applegpu_g13d is not offered to MLX (unset it to offer the profile\'s)',
      },
    });
    expect(mlxArchitectureEnv('applegpu_g13d', { MLX_METAL_GPU_ARCH: 'applegpu_g13d' })).toEqual({
      set: null,
      warning: null,
    });
  });

  it('a long value of the user’s is quoted clipped to its first 200 characters, with its length', () => {
    const long = `applegpu_${'x'.repeat(100_000)}`;
    expect(mlxArchitectureEnv('applegpu_g13d', { MLX_METAL_GPU_ARCH: long }).warning).toEqual({
      code: 'mlx-architecture-user-set',
      message: `MLX_METAL_GPU_ARCH is already set to "${long.slice(0, 200)}"… (100009 characters): that value is kept, and the profile's applegpu_g13d is not offered to MLX (unset it to offer the profile's)`,
    });
  });

  it('nothing offered: nothing set, whatever the environment holds', () => {
    expect(mlxArchitectureEnv(null, { MLX_METAL_GPU_ARCH: 'applegpu_g13s' })).toEqual({ set: null, warning: null });
    expect(mlxArchitectureEnv(null, {})).toEqual({ set: null, warning: null });
  });
});
