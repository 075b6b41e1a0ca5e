import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { InvalidOptionsError } from '../../lib/core/errors.js';
import { FAMILY_NAMES, FAMILY_VALUES } from '../../lib/core/families.js';
import { DEVICE_FIELD_NAMES, HOST_FIELD_NAMES } from '../../lib/device/fields.js';
import { loadNative } from '../../lib/device/native.js';
import { probe } from '../../lib/device/probe.js';
import { listSnapshots, loadSnapshot, reportFromSnapshot } from '../../lib/device/snapshots.js';
import type { CapabilityReport } from '../../lib/device/types.js';
import { buildConsumer, describeSim, dist, jsonFrom, requireSimBuild, root, runNode } from '../support/helpers.js';
import { NO_ADDON_STATUS } from '../support/status.js';

const probeIn = (snapshot: string, allDevices: boolean) =>
  jsonFrom<CapabilityReport>(
    runNode(
      `const m = await import(${JSON.stringify(path.join(dist, 'index.js'))}); console.log(JSON.stringify(m.probe({ allDevices: ${allDevices} })));`,
      { METAL_CAP_SHIM_SIM_SNAPSHOT: snapshot },
    ),
  );

describeSim('probe() over the simulated Metal', () => {
  beforeAll(requireSimBuild);

  describe.each(listSnapshots())('snapshot %s', (name) => {
    it.each([false, true])('returns exactly the snapshot’s answers (allDevices: %s)', (allDevices) => {
      const live = probeIn(name, allDevices);
      const recorded = reportFromSnapshot(loadSnapshot(name), { allDevices });
      expect(live.source).toBe('simulated');
      expect(live.snapshot).toBe(name);
      expect(live.supported).toBe(true);
      expect({ ...live, source: 'snapshot' }).toEqual(recorded);
    });
  });

  it('the native family table and the TypeScript one agree, name for name and value for value', () => {
    // The simulated build is selected by the variable alone (an empty value: a simulated Metal with no device).
    process.env.METAL_CAP_SHIM_SIM_SNAPSHOT ??= '';
    const native = loadNative();
    expect(native.binding?.families()).toEqual(Object.entries(FAMILY_VALUES));
  });

  it('the addon reads exactly the device and host fields lib/fields.ts lists, in its order (chip is parsed in TypeScript)', () => {
    const addon = path.join(root, 'build', 'Release', 'metal_cap_shim.node');
    const raw = jsonFrom<{ host: object; devices: object[] }>(
      runNode(
        `const { createRequire } = await import('node:module'); const b = createRequire(import.meta.url)(${JSON.stringify(addon)}); console.log(JSON.stringify(b.probe(true)));`,
        { METAL_CAP_SHIM_SIM_SNAPSHOT: 'macbookpro16-intel-amd-two-gpus' },
      ),
    );
    expect(raw.devices.map((d) => Object.keys(d))).toEqual([
      ['index', 'isDefault', ...DEVICE_FIELD_NAMES],
      ['index', 'isDefault', ...DEVICE_FIELD_NAMES],
    ]);
    expect(Object.keys(raw.host)).toEqual(HOST_FIELD_NAMES.filter((f) => f !== 'chip'));
  });

  it('a consumer compiled separately with test/sim-metal/flags reads the same answers as probe()', () => {
    const consumer = buildConsumer();
    for (const name of listSnapshots()) {
      const env = { ...process.env, METAL_CAP_SHIM_SIM_SNAPSHOT: name };
      const theirs = JSON.parse(execFileSync(consumer, ['--all'], { env, encoding: 'utf8' })) as {
        name: string;
        families: Record<string, boolean>;
        maxThreadgroupMemoryLength: number;
        recommendedMaxWorkingSetSize: number;
        hasUnifiedMemory: boolean;
      }[];
      const ours = probeIn(name, true).devices;
      expect(theirs.length).toBe(ours.length);
      theirs.forEach((t, i) => {
        const o = ours[i]!;
        expect(t.name).toBe(o.name);
        for (const family of FAMILY_NAMES)
          expect(t.families[String(FAMILY_VALUES[family])], `${name} ${family}`).toBe(o.families[family]);
        expect(t.maxThreadgroupMemoryLength).toBe(o.maxThreadgroupMemoryLength);
        expect(t.recommendedMaxWorkingSetSize).toBe(o.recommendedMaxWorkingSetSize);
        expect(t.hasUnifiedMemory).toBe(o.hasUnifiedMemory);
      });
    }
  });

  it('the flags script works from any working directory and rejects unknown arguments', () => {
    const flags = path.join(root, 'test', 'sim-metal', 'flags');
    const cflags = execFileSync(flags, ['--cflags'], { cwd: tmpdir(), encoding: 'utf8' });
    expect(cflags).toContain(path.join(root, 'test', 'sim-metal', 'include'));
    expect(cflags).toContain('-fobjc-runtime=gcc');
    expect(execFileSync(flags, ['--libs'], { cwd: '/', encoding: 'utf8' })).toContain('-lMetal');
    expect(() => execFileSync(flags, ['--bogus'], { stdio: 'pipe' })).toThrow();
  });

  it('a device the OS cannot answer for reports null, not a guess', () => {
    const report = probeIn('vz-guest-m1-ultra-tahoe-stock', false);
    expect(report.devices[0]!.architecture).toBeNull();
    expect(probeIn('m1-ultra-bare-metal', false).devices[0]!.architecture).toBe('applegpu_g13d');
  });

  it('with no snapshot selected, the simulated build reports no device', () => {
    const r = jsonFrom<CapabilityReport>(
      runNode(
        `const m = await import(${JSON.stringify(path.join(dist, 'index.js'))}); console.log(JSON.stringify(m.probe()));`,
        {
          METAL_CAP_SHIM_SIM_SNAPSHOT: '',
        },
      ),
    );
    expect(r.supported).toBe(false);
    expect(r.reason).toBe('no-device');
    expect(r.detail).toContain('METAL_CAP_SHIM_SIM_SNAPSHOT');
  });

  it('an unknown or malformed snapshot in the environment is a typed error, and the process lives on', () => {
    const code = `const m = await import(${JSON.stringify(path.join(dist, 'index.js'))});
      try { m.probe(); console.log('no error'); } catch (e) { console.log(e.code); }`;
    expect(runNode(code, { METAL_CAP_SHIM_SIM_SNAPSHOT: 'nope' }).stdout.trim()).toBe('ERR_SNAPSHOT_NOT_FOUND');
    expect(runNode(code, { METAL_CAP_SHIM_SIM_SNAPSHOT: path.join(root, 'package.json') }).stdout.trim()).toBe(
      'ERR_INVALID_SNAPSHOT',
    );
  });
});

describe('without the native build (any non-Mac install)', () => {
  it('importing works and probe() reports supported: false; applyProfile() does not apply', () => {
    // A copy of the package with no build/ and no prebuilds/: what `npm install` gives on Linux.
    const pkg = mkdtempSync(path.join(tmpdir(), 'mcs-nobuild-'));
    cpSync(path.join(root, 'dist'), path.join(pkg, 'dist'), { recursive: true });
    cpSync(path.join(root, 'snapshots'), path.join(pkg, 'snapshots'), { recursive: true });
    cpSync(path.join(root, 'package.json'), path.join(pkg, 'package.json'));
    symlinkSync(path.join(root, 'node_modules'), path.join(pkg, 'node_modules'));
    const esm = jsonFrom<{
      report: CapabilityReport;
      applied: unknown;
      strict: string;
      restored: unknown;
      status: unknown;
    }>(
      runNode(`const m = await import(${JSON.stringify(path.join(pkg, 'dist', 'index.js'))});
        let strict = 'none';
        try { m.applyProfile('cua-release', { strict: true }); } catch (e) { strict = e.code; }
        console.log(JSON.stringify({ report: m.probe(), applied: m.applyProfile(), strict, restored: m.restore(), status: m.status() }));`),
    );
    expect(esm.restored).toEqual({
      restored: false,
      reason: esm.report.reason,
      restoredHooks: [],
      conflicts: [],
      verification: null,
    });
    expect(esm.status).toEqual(NO_ADDON_STATUS);
    expect(esm.report.supported).toBe(false);
    expect(esm.report.reason).toBe(
      process.platform === 'darwin' ? 'native-module-unavailable' : 'unsupported-platform',
    );
    expect(esm.report.devices).toEqual([]);
    expect(esm.applied).toMatchObject({ applied: false, reason: esm.report.reason });
    expect(esm.strict).toBe(process.platform === 'darwin' ? 'ERR_NO_DEVICE' : 'ERR_UNSUPPORTED_PLATFORM');
    const cjs = runNode(
      `import { createRequire } from 'node:module'; const m = createRequire(import.meta.url)(${JSON.stringify(path.join(pkg, 'dist', 'index.cjs'))}); console.log(m.probe().supported);`,
    );
    expect(cjs.stdout.trim()).toBe('false');
  });
});

describe('probe() options', () => {
  it.each([[{ allDevices: 'yes' }], [{ devices: true }], ['all'], [[true]]])(
    'rejects %j with ERR_INVALID_OPTIONS',
    (bad) => {
      expect(() => probe(bad as never)).toThrow(InvalidOptionsError);
      try {
        probe(bad as never);
      } catch (e) {
        expect((e as InvalidOptionsError).code).toBe('ERR_INVALID_OPTIONS');
        expect((e as Error).message).toMatch(/probe\(\)/);
      }
    },
  );
});
