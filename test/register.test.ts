import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { APPLE9_ABOVE_M1_ULTRA } from './support/apply-helpers.js';
import { describeSim, dist, requireSimBuild, runNode } from './support/helpers.js';

const register = path.join(dist, 'register.js');
const registerCjs = path.join(dist, 'register.cjs');
const printStatus = `const m = await import(${JSON.stringify(path.join(dist, 'index.js'))});
  const s = m.status(); const d = m.probe().devices[0];
  console.log(JSON.stringify({ active: s.active, profile: s.profile, apple9: d.families.apple9, tg: d.maxThreadgroupMemoryLength, mlx: process.env.MLX_METAL_GPU_ARCH ?? null }));`;
const VM = { METAL_CAP_SHIM_SIM_SNAPSHOT: 'vz-guest-m1-ultra-tahoe-stock' };

function run(env: NodeJS.ProcessEnv, preload = ['--import', register]) {
  return runNode(printStatus, env, preload);
}

describeSim('metal-cap-shim/register', () => {
  beforeAll(requireSimBuild);

  it('applies host-family by default inside a VM, without a word: Apple7 and applegpu_g13d, the M1 Ultra host’s own', () => {
    for (const value of [undefined, '']) {
      const r = run({ ...VM, METAL_CAP_SHIM_PROFILE: value, MLX_METAL_GPU_ARCH: undefined });
      expect(r.status, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual({
        active: true,
        profile: {
          name: 'host-family',
          appleFamilyMax: 1007,
          maxThreadgroupMemoryLength: null,
          recommendedMaxWorkingSetSize: null,
          deviceName: null,
          families: {},
          mode: 'raise',
          mlxArchitecture: 'applegpu_g13d',
        },
        apple9: false,
        tg: 32768,
        // Set in the environment before the program's MLX could read it.
        mlx: 'applegpu_g13d',
      });
      expect(r.stderr).toBe('');
    }
  });

  it('the user’s own MLX_METAL_GPU_ARCH wins: kept, with one process warning', () => {
    const r = run({ ...VM, MLX_METAL_GPU_ARCH: 'applegpu_g13s' });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      active: true,
      profile: { name: 'host-family' },
      mlx: 'applegpu_g13s',
    });
    expect(r.stderr.split('\n').filter((line) => line.includes('metal-cap-shim'))).toEqual([
      `(node:${r.pid}) [METAL_CAP_SHIM_MLX_ARCHITECTURE_USER_SET] Warning: metal-cap-shim/register: MLX_METAL_GPU_ARCH is already set to "applegpu_g13s": that value is kept, and the profile's applegpu_g13d is not offered to MLX (unset it to offer the profile's)`,
    ]);
  });

  it('a profile that offers no architecture sets none; on bare metal nothing is set', () => {
    const apple7 = run({ ...VM, METAL_CAP_SHIM_PROFILE: 'apple7', MLX_METAL_GPU_ARCH: undefined });
    expect(JSON.parse(apple7.stdout)).toMatchObject({ active: true, mlx: null });
    const bare = run({ METAL_CAP_SHIM_SIM_SNAPSHOT: 'm1-ultra-bare-metal', MLX_METAL_GPU_ARCH: undefined });
    expect(JSON.parse(bare.stdout)).toMatchObject({ active: false, mlx: null });
  });

  it('cua-release claims Apple9 on an M1 Ultra (Apple7): applied, with one line on stderr', () => {
    const r = run({ ...VM, METAL_CAP_SHIM_PROFILE: 'cua-release' });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      active: true,
      profile: { name: 'cua-release' },
      apple9: true,
      tg: 65536,
    });
    expect(r.stderr.split('\n')[0]).toBe(
      `(node:${r.pid}) [METAL_CAP_SHIM_ABOVE_HOST_FAMILY] Warning: metal-cap-shim/register: ${APPLE9_ABOVE_M1_ULTRA.message}`,
    );
    expect(r.stderr.split('\n').filter((line) => line.includes('metal-cap-shim'))).toHaveLength(1);
  });

  it('a profile within the host’s family applies without a word', () => {
    for (const profile of ['apple7', 'host']) {
      const r = run({ ...VM, METAL_CAP_SHIM_PROFILE: profile });
      expect(r.status, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({
        active: true,
        profile: { name: profile },
        apple9: false,
        tg: 32768,
      });
      expect(r.stderr).toBe('');
    }
  });

  it('applies a profile named in METAL_CAP_SHIM_PROFILE', () => {
    const r = run({ ...VM, METAL_CAP_SHIM_PROFILE: 'apple7' });
    expect(JSON.parse(r.stdout)).toMatchObject({ active: true, profile: { name: 'apple7' }, apple9: false, tg: 32768 });
  });

  it('applies a JSON profile', () => {
    const r = run({ ...VM, METAL_CAP_SHIM_PROFILE: '{"appleFamilyMax":1008,"maxThreadgroupMemoryLength":49152}' });
    expect(JSON.parse(r.stdout)).toMatchObject({
      active: true,
      profile: { name: null, appleFamilyMax: 1008 },
      tg: 49152,
    });
  });

  it('a malformed value fails with the error code and message: exit 1, no stack trace', () => {
    for (const bad of ['{"appleFamilyMax":', 'apple99', '{"appleFamilyMax":2000}']) {
      const r = run({ ...VM, METAL_CAP_SHIM_PROFILE: bad });
      expect(r.status).toBe(1);
      expect(r.signal).toBeNull();
      expect(r.stderr).toMatch(/^metal-cap-shim\/register: ERR_INVALID_PROFILE: /);
      expect(r.stderr).not.toContain('    at ');
      expect(r.stdout).toBe('');
    }
  });

  it('does nothing on a host that is not a VM', () => {
    const r = run({ METAL_CAP_SHIM_SIM_SNAPSHOT: 'm1-ultra-bare-metal', METAL_CAP_SHIM_PROFILE: '' });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ active: false, apple9: false });
    expect(r.stderr).toBe('');
  });

  it('on bare metal it creates no Metal device: zero MTLCreateSystemDefaultDevice / MTLCopyAllDevices calls', () => {
    // The simulated Metal writes its call counters to this file when the process exits.
    const calls = (snapshot: string) => {
      const file = path.join(mkdtempSync(path.join(tmpdir(), 'mcs-calls-')), 'calls.json');
      const r = runNode(
        '',
        {
          METAL_CAP_SHIM_SIM_SNAPSHOT: snapshot,
          METAL_CAP_SHIM_PROFILE: 'apple7',
          METAL_CAP_SHIM_SIM_COUNTS_FILE: file,
        },
        ['--import', register],
      );
      expect(r.status, r.stderr).toBe(0);
      expect(r.stderr).toBe('');
      return JSON.parse(readFileSync(file, 'utf8')) as Record<string, number>;
    };
    expect(calls('m1-ultra-bare-metal')).toEqual({ MTLCreateSystemDefaultDevice: 0, MTLCopyAllDevices: 0 });
    // The counters do count: inside a VM, applying the profile obtains devices.
    const vm = calls('vz-guest-m1-ultra-tahoe-stock');
    expect(vm.MTLCreateSystemDefaultDevice).toBeGreaterThan(0);
    expect(vm.MTLCopyAllDevices).toBeGreaterThan(0);
  });

  it('does nothing when set to off', () => {
    expect(JSON.parse(run({ ...VM, METAL_CAP_SHIM_PROFILE: 'off' }).stdout)).toMatchObject({ active: false });
  });

  it('works from require() too, and ESM and CJS share one native state', () => {
    const r = runNode(
      `import { createRequire } from 'node:module';
       const cjs = createRequire(import.meta.url)(${JSON.stringify(path.join(dist, 'index.cjs'))});
       const esm = await import(${JSON.stringify(path.join(dist, 'index.js'))});
       const fromRegister = cjs.status().active;
       esm.applyProfile('apple7');
       const afterEsmApply = cjs.status().profile.name;
       cjs.restore();
       console.log(JSON.stringify({ fromRegister, afterEsmApply, esmAfterCjsRestore: esm.status().active }));`,
      { ...VM, METAL_CAP_SHIM_PROFILE: 'cua-release' },
      ['--require', registerCjs],
    );
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ fromRegister: true, afterEsmApply: 'apple7', esmAfterCjsRestore: false });
  });
});
