// On every bundled snapshot, simulated live and replayed, doctor's verified profile claims no more than 32768 bytes
// of threadgroup memory (no Apple GPU has more), with or without force, however much the simulated GPU runs.
import path from 'node:path';
import { expect, it } from 'vitest';
import { listSnapshots } from '../../lib/device/snapshots.js';
import { describeSim, dist, jsonFrom, requireSimBuild, runNode } from '../support/helpers.js';

const index = JSON.stringify(path.join(dist, 'index.js'));

/**
 * Each device's verified threadgroup memory, the proven size behind it and the larger size it accepted, from doctor()
 * in a process of its own.
 */
function verified(snapshot: string, options: string): [number | null, number | null, number | null][] {
  return jsonFrom<[number | null, number | null, number | null][]>(
    runNode(
      `const m = await import(${index});
       const r = await m.doctor(${options});
       const tg = (d) => d.probes.find((p) => p.id === 'threadgroup-memory');
       console.log(JSON.stringify(r.devices.map((d) => [d.verifiedProfile.maxThreadgroupMemoryLength, tg(d).provenThreadgroupMemory, tg(d).acceptedThreadgroupMemory])));`,
      { METAL_CAP_SHIM_SIM_SNAPSHOT: snapshot },
    ),
  );
}

describeSim('the verified threadgroup memory on every bundled snapshot', () => {
  it.each(listSnapshots())('%s: at most 32768 without force, live and replayed', (snapshot) => {
    requireSimBuild();
    const live = verified(snapshot, "{ probes: ['threadgroup-memory'], cache: false }");
    const replayed = verified(snapshot, `{ snapshot: ${JSON.stringify(snapshot)} }`);
    // The bound, on both sides: a claim is a size from 1 to 32768 bytes, or none.
    const outside = [...live, ...replayed].filter(
      ([claimed]) => claimed !== null && !(claimed >= 1 && claimed <= 32768),
    );
    expect(outside).toEqual([]);
    // And the whole of what each device claims and proved, reviewed once in the snapshot file.
    expect({ live, replayed }).toMatchSnapshot();
  });

  it('with force and allowAboveHardware a VM guest claims no more either: the simulated GPU runs 64 KiB, which is accepted, never proven', () => {
    requireSimBuild();
    expect(
      verified(
        'vz-guest-m1-ultra-tahoe-stock',
        "{ probes: ['threadgroup-memory'], cache: false, force: true, allowAboveHardware: true }",
      ),
    ).toEqual([[null, 32768, 65536]]);
    expect(
      verified(
        'vz-guest-m1-ultra-tahoe-stock',
        "{ probes: ['threadgroup-memory'], cache: false, allowAboveHardware: true }",
      ),
    ).toEqual([[null, 32768, 65536]]);
    // Without allowAboveHardware, force or not, no size above 32768 runs: nothing is accepted.
    expect(
      verified('vz-guest-m1-ultra-tahoe-stock', "{ probes: ['threadgroup-memory'], cache: false, force: true }"),
    ).toEqual([[null, 32768, null]]);
  });
});
