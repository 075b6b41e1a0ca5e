// audit() and MLX: the MLX release it predicts with, an architecture offered to MLX under the profile (the patched
// prediction sees it, the stock one does not), the switches a release ignores, and the verdict's words for them.
// Offline, on the bundled snapshots; the expectations come from predictMlx itself, stock against offered.
import { describe, expect, it } from 'vitest';
import { audit, type EngineComparison } from '../../lib/audit/audit.js';
import { listSnapshots, loadSnapshot, reportFromSnapshot } from '../../lib/device/snapshots.js';
import { MLX_ARCHITECTURE_FLAGS, parseMacos, predictMlx, type MlxFlag } from '../../lib/engines/index.js';

const M1 = 'm1-ultra-bare-metal';

function mlxOf(a: ReturnType<typeof audit>): EngineComparison {
  return a.devices.find((d) => d.index === 0)!.engines.find((e) => e.engine === 'mlx')!;
}

/** predictMlx on a snapshot's device 0, stock, with an architecture offered or not. */
function predicted(snapshot: string, release: string | undefined, architectureName: string | null) {
  const report = reportFromSnapshot(loadSnapshot(snapshot));
  const host = report.host!;
  return predictMlx(
    { device: report.devices[0]!, host, env: {}, macos: parseMacos(host) },
    { release, architectureName },
  );
}

describe('audit: an architecture offered to MLX', () => {
  it.each(listSnapshots())(
    '%s: the patched MLX values are predictMlx with the offer, the stock ones without',
    (snapshot) => {
      const a = audit({ snapshot, engines: ['mlx'], env: {}, force: true, mlxArchitecture: 'applegpu_g17s' });
      const mlx = mlxOf(a);
      if (mlx.before.engine !== 'mlx' || mlx.after.engine !== 'mlx') throw new Error('an MLX comparison');
      const stock = predicted(snapshot, undefined, null);
      const offered = predicted(snapshot, undefined, 'applegpu_g17s');
      expect(mlx.before.offeredArchitecture).toBeNull();
      expect(mlx.after.offeredArchitecture).toBe('applegpu_g17s');
      for (const f of MLX_ARCHITECTURE_FLAGS) {
        expect([f, mlx.before.flags[f].value, mlx.after.flags[f].value]).toEqual([
          f,
          stock.flags[f].value,
          offered.flags[f].value,
        ]);
      }
      const changed = mlx.flipped.filter((f) => MLX_ARCHITECTURE_FLAGS.includes(f.flag as MlxFlag));
      expect(changed.length > 0).toBe(true);
      expect(a.verdict.summary).toContain(
        `MLX offered "applegpu_g17s": ${changed.length} architecture-driven value${changed.length === 1 ? ' changes' : 's change'}`,
      );
      expect(a.warnings.filter((w) => w.code === 'mlx-switch-ignored')).toEqual([]);
    },
  );

  it('a release before v0.31.0 ignores it: no value changes, one mlx-switch-ignored warning, the verdict says so', () => {
    const a = audit({
      snapshot: M1,
      engines: ['mlx'],
      env: {},
      mlxRelease: 'v0.30.6',
      mlxArchitecture: 'applegpu_g17s',
    });
    const mlx = mlxOf(a);
    expect(mlx.flipped).toEqual([]);
    expect(a.warnings.filter((w) => w.code === 'mlx-switch-ignored')).toEqual([
      {
        code: 'mlx-switch-ignored',
        message:
          'MLX v0.30.6 ignores the offered architecture "applegpu_g17s": MLX_METAL_GPU_ARCH is read from v0.31.0 (v0.31.0 to v0.31.x)',
      },
    ]);
    expect(a.verdict.summary).toContain('MLX ignores the offered "applegpu_g17s"');
  });

  it('a switch in the environment that the release does not read yet is warned about; one it reads is not', () => {
    const warned = (mlxRelease: string) =>
      audit({ snapshot: M1, engines: ['mlx'], env: { MLX_SDPA_BLOCKS: '64' }, mlxRelease }).warnings.filter(
        (w) => w.code === 'mlx-switch-ignored',
      );
    expect(warned('v0.31.2')).toEqual([
      {
        code: 'mlx-switch-ignored',
        message: 'MLX v0.31.2 ignores MLX_SDPA_BLOCKS="64": MLX_SDPA_BLOCKS is read from v0.32.0 (v0.32.0)',
      },
    ]);
    expect(warned('v0.32.0')).toEqual([]);
  });

  it('without an offer the stock and patched MLX architecture values are the same, and the verdict says nothing of MLX', () => {
    const a = audit({ snapshot: M1, engines: ['mlx'], env: {} });
    expect(mlxOf(a).flipped).toEqual([]);
    expect(a.verdict.summary).not.toContain('MLX');
  });

  it.each<[string, Record<string, unknown>, string, string]>([
    [
      'a release that is no version',
      { mlxRelease: 'latest' },
      'mlxRelease',
      'mlxRelease must be an MLX release like "v0.31.0" or "0.31.0"; got the string "latest"',
    ],
    [
      'an architecture that is no string',
      { mlxArchitecture: 17 },
      'mlxArchitecture',
      `audit() option 'mlxArchitecture' must be an architecture name like "applegpu_g13s", or null`,
    ],
  ])('refuses %s, naming the option', (_what, options, option, message) => {
    let thrown: unknown = null;
    try {
      audit({ snapshot: M1, engines: ['mlx'], env: {}, ...options });
    } catch (err) {
      thrown = err;
    }
    const e = thrown as { name: string; option: string; message: string };
    expect({ name: e.name, option: e.option, message: e.message }).toEqual({
      name: 'InvalidOptionsError',
      option,
      message,
    });
  });
});
