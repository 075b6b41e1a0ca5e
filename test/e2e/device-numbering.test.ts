// One device numbering: a device's `index` is its place in MTLCopyAllDevices(), with the default device marked, in
// probe (the default device alone, or every device), a snapshot's report, audit and doctor, live and replayed. On a
// two-GPU Mac the default device is the second one listed: a script that reads `probe --json` and passes the index to
// `doctor --device` must get the same GPU.
import { describe, expect, it } from 'vitest';
import { audit } from '../../lib/audit/audit.js';
import { probe, probeSnapshot } from '../../lib/device/probe.js';
import { listSnapshots } from '../../lib/device/snapshots.js';
import { doctor } from '../../lib/doctor/index.js';
import { describeSim, jsonFrom, requireSimBuild, runCli } from '../support/helpers.js';
import { useSimulation } from '../support/simulation.js';

type Numbered = { index: number; name: string; isDefault: boolean };
const numbering = (devices: readonly Numbered[]) =>
  devices.map(({ index, name, isDefault }) => ({ index, name, isDefault }));

const TWO_GPUS = 'macbookpro16-intel-amd-two-gpus';

describe('offline, every bundled snapshot numbers its devices one way', () => {
  for (const id of listSnapshots()) {
    it(`${id}: probe, probe --all-devices, audit and doctor's replay`, async () => {
      const all = numbering(probeSnapshot(id, { allDevices: true }).devices);
      expect(all.map((d) => d.index)).toEqual(all.map((_, i) => i));
      expect(all.filter((d) => d.isDefault).length).toBe(1);
      expect(numbering(probeSnapshot(id).devices)).toEqual(all.filter((d) => d.isDefault));
      expect(numbering(audit({ snapshot: id }).devices)).toEqual(all);
      const replayed = await doctor({ snapshot: id });
      if (!replayed.supported) throw new Error(replayed.detail);
      expect(replayed.devices.map(({ index, name }) => ({ index, name }))).toEqual(
        all.map(({ index, name }) => ({ index, name })),
      );
      for (const d of all) {
        const one = await doctor({ snapshot: id, device: d.index });
        expect(one.supported && one.devices.map((x) => x.name)).toEqual([d.name]);
      }
    });
  }
});

describeSim('live, over the simulated Metal, every bundled snapshot numbers its devices one way', () => {
  requireSimBuild();
  for (const id of listSnapshots()) {
    describe(id, () => {
      useSimulation(id);
      it('probe() of the default device gives it the index probe({ allDevices }) and the snapshot give it', () => {
        const all = probe({ allDevices: true });
        const one = probe();
        if (!all.supported || !one.supported) throw new Error('no device');
        expect(numbering(all.devices)).toEqual(numbering(probeSnapshot(id, { allDevices: true }).devices));
        expect(numbering(one.devices)).toEqual(numbering(all.devices).filter((d) => d.isDefault));
      });
    });
  }
});

describeSim(`the CLI on ${TWO_GPUS}: probe --json, audit --json and doctor --device N name the same device N`, () => {
  requireSimBuild();
  useSimulation(TWO_GPUS);

  const namesOf = (args: string[]) => {
    const probed = jsonFrom<{ devices: Numbered[] }>(runCli(['probe', '--json', ...args])).devices;
    expect(probed.length).toBe(1);
    const { index, name } = probed[0]!;
    // audit exits 3 on bare metal (the default profile would raise answers there), doctor 1 for a recorded fault:
    // their JSON is printed either way.
    const audited = (JSON.parse(runCli(['audit', '--json', ...args]).stdout) as { devices: Numbered[] }).devices;
    const small = args.includes('--snapshot') ? [] : ['--mmap-size', '1M'];
    const doctor = runCli(['doctor', '--json', '--device', String(index), ...small, ...args]);
    const doctored = (JSON.parse(doctor.stdout) as { devices: Numbered[] }).devices;
    return {
      probe: { index, name },
      audit: audited.filter((d) => d.index === index).map((d) => d.name),
      doctor: doctored.map((d) => [d.index, d.name]),
    };
  };

  it('replayed from the snapshot', () => {
    expect(namesOf(['--snapshot', TWO_GPUS])).toEqual({
      probe: { index: 1, name: 'AMD Radeon Pro 5500M' },
      audit: ['AMD Radeon Pro 5500M'],
      doctor: [[1, 'AMD Radeon Pro 5500M']],
    });
  });

  it('live', () => {
    expect(namesOf([])).toEqual({
      probe: { index: 1, name: 'AMD Radeon Pro 5500M' },
      audit: ['AMD Radeon Pro 5500M'],
      doctor: [[1, 'AMD Radeon Pro 5500M']],
    });
  });
});
