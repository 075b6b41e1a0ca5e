// Failure paths of applyProfile over simulated devices built for the purpose: a device class that lacks a query
// (hooking fails: nothing may stay installed), a device whose answer changes under the patch (verification fails:
// the patch is taken out), a host whose VM status is unknown (raising is refused), and no device at all.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { describeSim, dist, jsonFrom, requireSimBuild, root, runNode } from '../support/helpers.js';
import { simulationJson } from '../sim-metal/simulation.js';

const dir = mkdtempSync(path.join(tmpdir(), 'mcs-failure-'));
const stockGuest = () =>
  JSON.parse(readFileSync(path.join(root, 'snapshots', 'vz-guest-m1-ultra-tahoe-stock.json'), 'utf8'));

function snapshotFile(name: string, edit: (s: ReturnType<typeof stockGuest>) => void): string {
  const s = stockGuest();
  s.id = name;
  edit(s);
  const file = path.join(dir, `${name}.json`);
  writeFileSync(file, simulationJson(s));
  return file;
}

const index = JSON.stringify(path.join(dist, 'index.js'));
const run = <T>(snapshot: string, body: string) => {
  // Static imports in the body must come first in the module.
  const imports = body
    .split('\n')
    .filter((l) => /^\s*import /.test(l))
    .join('\n');
  const rest = body
    .split('\n')
    .filter((l) => !/^\s*import /.test(l))
    .join('\n');
  return jsonFrom<T>(
    runNode(`${imports}\nconst m = await import(${index});\n${rest}`, { METAL_CAP_SHIM_SIM_SNAPSHOT: snapshot }),
  );
};

describeSim('applyProfile failure paths', () => {
  beforeAll(requireSimBuild);

  it('a device class that cannot be hooked: not applied (hook-failed), and the hooks already installed are taken out', () => {
    const file = snapshotFile('lacks-working-set', (s) => {
      const broken = structuredClone(s.devices[0]);
      broken.className = 'SimBrokenDevice';
      broken.simulation = { methodsOnConcreteClass: false, lacks: 'recommendedMaxWorkingSetSize' };
      s.devices.push(broken);
    });
    const r = run<{
      result: Record<string, unknown>;
      status: { active: boolean; hooks: unknown[] };
      apple9: boolean[];
    }>(
      file,
      `const result = m.applyProfile('cua-release');
       console.log(JSON.stringify({ result, status: m.status(), apple9: m.probe({ allDevices: true }).devices.map((d) => d.families.apple9) }));`,
    );
    expect(r.result).toMatchObject({ applied: false, reason: 'hook-failed', patchedClasses: [], verification: null });
    expect(r.result.detail).toContain('SimBrokenDevice recommendedMaxWorkingSetSize');
    expect(r.result.detail).toContain('nothing was changed');
    expect(r.status).toMatchObject({ active: false, hooks: [] });
    expect(r.apple9).toEqual([false, false]);
  });

  it('register: a hook failure leaves the program running unpatched, with a warning', () => {
    const file = snapshotFile('lacks-family', (s) => {
      s.devices[0].simulation = { methodsOnConcreteClass: false, lacks: 'supportsFamily:' };
    });
    const r = runNode(`console.log('program ran')`, { METAL_CAP_SHIM_SIM_SNAPSHOT: file, METAL_CAP_SHIM_PROFILE: '' }, [
      '--import',
      path.join(dist, 'register.js'),
    ]);
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toBe('program ran');
    expect(r.stderr).toContain('METAL_CAP_SHIM_NOT_APPLIED');
    expect(r.stderr).toContain('profile not applied (hook-failed: cannot hook -[AppleParavirtDevice supportsFamily:]');
  });

  it('an answer that does not match the profile fails verification: not applied, and the patch is taken out', () => {
    // The device answers its recorded 32768 twice (stock probe, "before" probe), then 32784.
    const file = snapshotFile('drifting', (s) => {
      s.devices[0].simulation = { methodsOnConcreteClass: false, driftAfter: 2 };
    });
    const r = run<{ result: Record<string, unknown>; status: { active: boolean; hooks: unknown[] } }>(
      file,
      `const result = m.applyProfile('apple9-hw-tg');
       console.log(JSON.stringify({ result, status: m.status() }));`,
    );
    expect(r.result).toMatchObject({ applied: false, reason: 'verification-failed' });
    expect(r.result.detail).toContain('maxThreadgroupMemoryLength=32784, expected 32768');
    expect((r.result.verification as { mismatches: unknown[] }).mismatches).toEqual([
      {
        device: 0,
        className: 'AppleParavirtDevice',
        field: 'maxThreadgroupMemoryLength',
        expected: 32768,
        actual: 32784,
      },
    ]);
    expect(
      (r.result.after as { devices: { maxThreadgroupMemoryLength: number }[] }).devices[0]!.maxThreadgroupMemoryLength,
    ).toBe(32784);
    expect(r.status).toMatchObject({ active: false, hooks: [] });
  });

  it('with strict, a verification failure throws ERR_VERIFICATION_FAILED', () => {
    const file = snapshotFile('drifting-strict', (s) => {
      s.devices[0].simulation = { methodsOnConcreteClass: false, driftAfter: 2 };
    });
    const r = run<{ code: string; active: boolean }>(
      file,
      `let code = null; try { m.applyProfile('apple9-hw-tg', { strict: true }); } catch (e) { code = e.code; }
       console.log(JSON.stringify({ code, active: m.status().active }));`,
    );
    expect(r).toEqual({ code: 'ERR_VERIFICATION_FAILED', active: false });
  });

  it('a host whose VM status is unknown is treated like bare metal: raising is refused', () => {
    const file = snapshotFile('vm-unknown', (s) => {
      s.host.isVirtualMachine = null;
      s.host.provenance.isVirtualMachine = 'unrecorded';
    });
    const r = run<{ result: { applied: boolean; reason: string; detail: string }; code: string; active: boolean }>(
      file,
      `let code = null; try { m.applyProfile('apple7', { strict: true }); } catch (e) { code = e.code; }
       console.log(JSON.stringify({ result: m.applyProfile('apple7'), code, active: m.status().active }));`,
    );
    expect(r.result).toMatchObject({ applied: false, reason: 'refused-bare-metal' });
    expect(r.result.detail).toContain('could not be identified as a virtual machine');
    expect(r.code).toBe('ERR_REFUSED_BARE_METAL');
    expect(r.active).toBe(false);
  });

  it('no device: applied false with reason no-device, and with strict ERR_NO_DEVICE', () => {
    const r = run<{ result: { applied: boolean; reason: string }; code: string }>(
      '',
      `let code = null; try { m.applyProfile('cua-release', { strict: true }); } catch (e) { code = e.code; }
       console.log(JSON.stringify({ result: m.applyProfile('cua-release'), code }));`,
    );
    expect(r.result).toMatchObject({ applied: false, reason: 'no-device' });
    expect(r.code).toBe('ERR_NO_DEVICE');
  });
});

describeSim('a device class that subclasses another hooked device class', () => {
  beforeAll(requireSimBuild);

  it('restore puts both back exactly, whichever was hooked first', () => {
    // The subclass comes first in the device list, so it is hooked before its superclass. Restoring in install
    // order would copy the superclass's replacement into the subclass.
    const file = snapshotFile('class-chain', (s) => {
      const parent = structuredClone(s.devices[0]);
      parent.className = 'SimParentDevice';
      parent.simulation = { methodsOnConcreteClass: true };
      const child = structuredClone(s.devices[0]);
      child.className = 'SimChildDevice';
      child.simulation = { methodsOnConcreteClass: false, subclassOf: 'SimParentDevice' };
      s.devices = [child, parent];
    });
    const fixture = JSON.stringify(path.join(root, 'build', 'test', 'sim_fixture.node'));
    const r = run<{
      before: string[];
      modes: Record<string, string[]>;
      cycles: { conflicts: unknown[]; ok: boolean; imps: string[] }[];
    }>(
      file,
      `import { createRequire } from 'node:module';
       const f = createRequire(import.meta.url)(${fixture});
       const imps = () => ['SimChildDevice', 'SimParentDevice'].flatMap((c) =>
         ['supportsFamily:', 'maxThreadgroupMemoryLength'].map((sel) => f.methodInfo(c, sel).imp));
       m.probe({ allDevices: true });
       const before = imps();
       let modes = null;
       const cycles = [];
       for (let i = 0; i < 2; i++) {
         const applied = m.applyProfile('cua-release');
         modes ??= Object.fromEntries(applied.patchedClasses.map((c) => [c.className, c.selectors.map((s) => s.mode)]));
         const restored = m.restore();
         cycles.push({ conflicts: restored.conflicts, ok: restored.verification.ok, imps: imps() });
       }
       console.log(JSON.stringify({ before, modes, cycles }));`,
    );
    expect(r.modes).toEqual({
      SimChildDevice: ['added', 'added', 'added'],
      SimParentDevice: ['replaced', 'replaced', 'replaced'],
    });
    // Before: the child inherits the parent's own implementations.
    expect(r.before.slice(0, 2)).toEqual(r.before.slice(2, 4));
    // After: the parent has its own implementations back exactly; the child keeps the methods added to it as
    // pass-throughs to whatever the parent answers now (the public runtime cannot remove a method), the same ones
    // each cycle, and answers as before (verification ok).
    const passThrough = r.cycles[0]!.imps.slice(0, 2);
    expect(passThrough).not.toEqual(r.before.slice(0, 2));
    for (const cycle of r.cycles) {
      expect(cycle).toEqual({ conflicts: [], ok: true, imps: [...passThrough, ...r.before.slice(2, 4)] });
    }
  });
});
