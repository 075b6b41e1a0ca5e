// The simulated Metal's file format (test/sim-metal/simulation.ts): a snapshot plus the simulation's extension (class
// layout, test aids, simulated faults) under its own schema. The shipped snapshot format has none of it: the
// package's readers refuse the extension, and the simulation's validator takes it.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DOCTOR_PROBE_IDS } from '../../lib/device/doctor-vocabulary.js';
import { loadSnapshot, snapshotsDir, validateSnapshot } from '../../lib/device/snapshots.js';
import { root } from '../support/helpers.js';
import { SIMULATION_SCHEMA, simulationJson, snapshotOf, validateSimulation, type Simulation } from './simulation.js';

const bundled = (name: string) =>
  JSON.parse(readFileSync(path.join(snapshotsDir(), `${name}.json`), 'utf8')) as Record<string, any>;
/** The stock guest as a simulation file, edited. */
const guest = (edit: (s: Record<string, any>) => void = () => {}) => {
  const s = bundled('vz-guest-m1-ultra-tahoe-stock');
  s.schema = SIMULATION_SCHEMA;
  s.devices[0].simulation = { methodsOnConcreteClass: false };
  edit(s);
  return s;
};
const twoGpus = () => {
  const s = bundled('macbookpro16-intel-amd-two-gpus');
  s.schema = SIMULATION_SCHEMA;
  for (const d of s.devices) d.simulation = {};
  return s;
};
const FIXTURES = path.join(root, 'test', 'fixtures', 'snapshots');
const fixture = (name: string) => JSON.parse(readFileSync(path.join(FIXTURES, name), 'utf8')) as Simulation;

/** The error validateSimulation gives for a field, in full. */
const rejection = (field: string, says: string) => ({
  name: 'InvalidSnapshotError',
  code: 'ERR_INVALID_SNAPSHOT',
  field,
  message: `test: ${field} ${says}; see test/sim-metal/README.md for the format`,
});
/** The error a call throws, as a plain record of what a caller can see. */
function thrown(fn: () => unknown): Record<string, unknown> {
  try {
    fn();
  } catch (e) {
    const err = e as Error & { code: string; field: string | null };
    return { name: err.constructor.name, code: err.code, field: err.field, message: err.message };
  }
  throw new Error('expected an error');
}
const rejected = (s: unknown) => thrown(() => validateSimulation(s, 'test'));
const notRecorded = { status: 'not-recorded' };
const section = (recorded: Record<string, object>) => ({
  provenance: 'assumed',
  probes: Object.fromEntries(DOCTOR_PROBE_IDS.map((id) => [id, recorded[id] ?? notRecorded])),
});
const withDoctor = (recorded: Record<string, object>) => guest((s) => (s.devices[0].doctor = section(recorded)));

describe('the shipped format has no simulation fields', () => {
  it('the bundled snapshots carry no extension', () => {
    for (const name of ['github-macos-14-arm64-runner', 'm1-ultra-bare-metal', 'macbookpro16-intel-amd-two-gpus']) {
      expect(loadSnapshot(name).devices.map((d) => 'simulation' in d)).toEqual(
        loadSnapshot(name).devices.map(() => false),
      );
    }
  });

  it('a snapshot with a simulation section, or a simulated fault, is refused by the package', () => {
    const s = guest();
    s.schema = 'metal-cap-shim/snapshot@1';
    expect(thrown(() => validateSnapshot(s, 'test'))).toEqual({
      name: 'InvalidSnapshotError',
      code: 'ERR_INVALID_SNAPSHOT',
      field: 'devices[0].simulation',
      message: 'test: devices[0].simulation is not a known field; see snapshots/README.md for the format',
    });
    const faulty = snapshotOf(withDoctor({ 'threadgroup-memory': { status: 'pass' } }) as Simulation);
    (faulty.devices[0]!.doctor!.probes['threadgroup-memory'] as unknown as Record<string, unknown>).fault =
      'answered-limit';
    expect(thrown(() => validateSnapshot(faulty, 'test'))).toEqual({
      name: 'InvalidSnapshotError',
      code: 'ERR_INVALID_SNAPSHOT',
      field: 'devices[0].doctor.probes.threadgroup-memory.fault',
      message:
        'test: devices[0].doctor.probes.threadgroup-memory.fault is not a known field; see snapshots/README.md for the format',
    });
    const nocopy = snapshotOf(withDoctor({ 'nocopy-mmap': { status: 'timeout' } }) as Simulation);
    (nocopy.devices[0]!.doctor!.probes['nocopy-mmap'] as unknown as Record<string, unknown>).fault = 'compile';
    expect(thrown(() => validateSnapshot(nocopy, 'test'))).toMatchObject({
      field: 'devices[0].doctor.probes.nocopy-mmap.fault',
      message:
        'test: devices[0].doctor.probes.nocopy-mmap.fault must be one of stale, zero-length; see snapshots/README.md for the format',
    });
  });

  it('a simulation file is no snapshot: --snapshot names its schema and the ones it takes', () => {
    expect(thrown(() => loadSnapshot(path.join(FIXTURES, 'doctor-sim-behaviours.json')))).toMatchObject({
      code: 'ERR_INVALID_SNAPSHOT',
      field: 'schema',
    });
  });

  it('snapshotOf leaves the snapshot the simulation stands for, which the package accepts', () => {
    for (const name of [
      'doctor-faults.json',
      'doctor-sim-behaviours.json',
      'doctor-sim-slow.json',
      'doctor-runner-faults.json',
    ]) {
      const snapshot = snapshotOf(validateSimulation(fixture(name), name));
      expect(validateSnapshot(snapshot, name)).toEqual(snapshot);
    }
  });

  it('simulationJson tags a file by what it uses: the snapshot schema without the extension, else the simulation one', () => {
    const plain = bundled('vz-guest-m1-ultra-tahoe-stock') as Simulation;
    expect(JSON.parse(simulationJson(plain)).schema).toBe('metal-cap-shim/snapshot@1');
    expect(JSON.parse(simulationJson(guest() as Simulation)).schema).toBe(SIMULATION_SCHEMA);
    const withFault = withDoctor({ bfloat: { status: 'timeout', fault: 'compile' } });
    delete withFault.devices[0].simulation;
    expect(JSON.parse(simulationJson(withFault as Simulation)).schema).toBe(SIMULATION_SCHEMA);
  });

  it('the extension under the snapshot schema is refused, naming the schema to use', () => {
    const s = guest();
    s.schema = 'metal-cap-shim/snapshot@1';
    expect(rejected(s)).toEqual(
      rejection('schema', `must be "${SIMULATION_SCHEMA}": devices[0] uses the simulation's extension`),
    );
  });
});

describe('the fixtures', () => {
  it('the fault fixture validates, with every status and both NoCopy faults', () => {
    const s = validateSimulation(fixture('doctor-faults.json'), 'doctor-faults');
    const recorded = s.devices.flatMap((d) => Object.values(d.doctor?.probes ?? {}));
    expect(new Set(recorded.map((p) => p.status))).toEqual(
      new Set(['not-recorded', 'pass', 'wrong-result', 'fail', 'unsupported', 'timeout']),
    );
    expect(new Set(recorded.map((p) => p.fault).filter(Boolean))).toEqual(new Set(['stale', 'zero-length']));
  });

  it('the behaviours fixture validates: Metal raising (error), a limit that follows the answer, overlapping threadgroups, a hung compiler, 64-wide SIMD-groups', () => {
    const s = validateSimulation(fixture('doctor-sim-behaviours.json'), 'doctor-sim-behaviours');
    expect(
      s.devices.map((d) => [
        d.doctor!.probes['threadgroup-memory'],
        d.doctor!.probes.bfloat,
        d.simulation?.threadExecutionWidth ?? null,
      ]),
    ).toEqual([
      [
        { status: 'error', detail: 'fixture: Metal raises at commit' },
        { status: 'error', detail: 'fixture: Metal raises at commit' },
        null,
      ],
      [
        {
          status: 'pass',
          detail: 'fixture: the limit is the answered maxThreadgroupMemoryLength',
          fault: 'answered-limit',
        },
        { status: 'not-recorded' },
        null,
      ],
      [
        {
          status: 'wrong-result',
          detail: 'fixture: threadgroups running at once overlap above 32768 bytes',
          provenThreadgroupMemory: 32768,
          fault: 'threadgroups-overlap',
        },
        { status: 'not-recorded' },
        null,
      ],
      [
        { status: 'not-recorded' },
        { status: 'timeout', detail: 'fixture: the compiler never finishes the bfloat kernel', fault: 'compile' },
        null,
      ],
      [{ status: 'not-recorded' }, { status: 'not-recorded' }, 64],
    ]);
  });

  it('the committed fuzz regressions the TypeScript side can see are rejected before native code reads them', () => {
    const dir = path.join(root, 'test', 'fuzz', 'regressions', 'sim_snapshot_fuzz');
    const load = (name: string) => ({
      ...JSON.parse(readFileSync(path.join(dir, name), 'utf8')),
      schema: SIMULATION_SCHEMA,
    });
    expect(rejected(load('subclassof-cycle.json')).field).toBe('devices[0].simulation.subclassOf');
    expect(rejected(load('subclassof-self.json')).field).toBe('devices[0].simulation.subclassOf');
  });
});

describe('the simulation section, rule by rule', () => {
  it.each<[string, (s: Record<string, any>) => void, string, string]>([
    ['simulation as a boolean', (s) => (s.devices[0].simulation = true), 'devices[0].simulation', 'must be an object'],
    [
      'a layout that is not a boolean',
      (s) => (s.devices[0].simulation.methodsOnConcreteClass = 1),
      'devices[0].simulation.methodsOnConcreteClass',
      'must be true or false',
    ],
    [
      'an unknown simulation field',
      (s) => (s.devices[0].simulation.slow = true),
      'devices[0].simulation.slow',
      'is not a known field',
    ],
    [
      'a missing query that cannot be simulated',
      (s) => (s.devices[0].simulation.lacks = 'name'),
      'devices[0].simulation.lacks',
      'must be one of supportsFamily:, maxThreadgroupMemoryLength, recommendedMaxWorkingSetSize',
    ],
    [
      'a negative drift',
      (s) => (s.devices[0].simulation.driftAfter = -1),
      'devices[0].simulation.driftAfter',
      'must be an integer ≥ 0',
    ],
    [
      'a drift given as a string',
      (s) => (s.devices[0].simulation.driftAfter = '3'),
      'devices[0].simulation.driftAfter',
      'must be an integer ≥ 0',
    ],
    [
      'a device subclassing itself',
      (s) => (s.devices[0].simulation.subclassOf = s.devices[0].className),
      'devices[0].simulation.subclassOf',
      "must name another device's className",
    ],
    [
      'a device subclassing a class no device has',
      (s) => (s.devices[0].simulation.subclassOf = 'Elsewhere'),
      'devices[0].simulation.subclassOf',
      "must name another device's className",
    ],
    [
      'a revocation flag that is not a boolean',
      (s) => (s.devices[0].simulation.revokesAfterTimeout = 'yes'),
      'devices[0].simulation.revokesAfterTimeout',
      'must be true or false',
    ],
  ])('rejects %s', (_what, edit, field, says) => {
    expect(rejected(guest(edit))).toEqual(rejection(field, says));
  });

  it.each<[string, (s: Record<string, any>) => void]>([
    ['a device without simulation', (s) => delete s.devices[0].simulation],
    ['an empty simulation section (the layout from the simulation’s table)', (s) => (s.devices[0].simulation = {})],
    ['a device lacking a query', (s) => (s.devices[0].simulation.lacks = 'maxThreadgroupMemoryLength')],
    ['a drift of 0', (s) => (s.devices[0].simulation.driftAfter = 0)],
    ['a revoking device', (s) => (s.devices[0].simulation.revokesAfterTimeout = true)],
  ])('accepts %s', (_what, edit) => {
    const data = guest(edit);
    expect(validateSimulation(data, 'test')).toEqual(data);
  });

  it('simulation.threadExecutionWidth: a whole number from 1, and nothing else', () => {
    const width = (w: unknown) => guest((s) => (s.devices[0].simulation.threadExecutionWidth = w));
    const no = rejection('devices[0].simulation.threadExecutionWidth', 'must be an integer ≥ 1');
    expect([rejected(width(0)), rejected(width(1.5)), rejected(width('32'))]).toEqual([no, no, no]);
    expect(validateSimulation(width(1), 'test').devices[0]!.simulation?.threadExecutionWidth).toBe(1);
  });

  it.each(['compileMs', 'gpuMs'])('simulation.%s: a whole number of milliseconds from 0 to 60000', (key) => {
    const set = (v: unknown) => guest((s) => (s.devices[0].simulation[key] = v));
    const no = rejection(`devices[0].simulation.${key}`, 'must be an integer from 0 to 60000 (milliseconds)');
    expect([-1, 60_001, 1.5, '5', null].map((v) => rejected(set(v)))).toEqual([no, no, no, no, no]);
    expect(
      [0, 60_000].map(
        (v) => (validateSimulation(set(v), 'test').devices[0]!.simulation as Record<string, unknown>)[key],
      ),
    ).toEqual([0, 60_000]);
  });
});

describe('simulation.defaultObjectClass', () => {
  const NO = 'must be an Objective-C class name no device has';
  it('a class name no device has, on the default device only', () => {
    const ok = guest((s) => (s.devices[0].simulation.defaultObjectClass = 'MTLDebugDevice'));
    expect(validateSimulation(ok, 'test').devices[0]!.simulation).toEqual({
      methodsOnConcreteClass: false,
      defaultObjectClass: 'MTLDebugDevice',
    });
    for (const bad of ['AppleParavirtDevice', 'not a class', 42, '9Wrapper', ['MTLDebugDevice']]) {
      expect(rejected(guest((s) => (s.devices[0].simulation.defaultObjectClass = bad)))).toEqual(
        rejection('devices[0].simulation.defaultObjectClass', NO),
      );
    }
    const two = twoGpus();
    two.devices[0].simulation.defaultObjectClass = 'MTLDebugDevice';
    expect(rejected(two)).toEqual(
      rejection('devices[0].simulation.defaultObjectClass', 'belongs on the default device only'),
    );
    const other = twoGpus();
    other.devices[1].simulation.defaultObjectClass = 'MTLDebugDevice';
    expect(validateSimulation(other, 'test')).toEqual(other);
  });
});

describe('simulated faults', () => {
  const at = 'devices[0].doctor.probes.';
  it.each<[string, Record<string, object>, string, string]>([
    [
      'the answered limit on a wrong-result',
      { 'threadgroup-memory': { status: 'wrong-result', fault: 'answered-limit' } },
      `${at}threadgroup-memory.fault`,
      'is only for a pass',
    ],
    [
      'a threadgroup fault on another probe',
      { bfloat: { status: 'pass', fault: 'answered-limit' } },
      `${at}bfloat.fault`,
      'answered-limit is only for threadgroup-memory',
    ],
    [
      'the compile fault on anything but a timeout',
      { bfloat: { status: 'fail', fault: 'compile' } },
      `${at}bfloat.fault`,
      'compile is only for a timeout',
    ],
    [
      'the commit fault on anything but a timeout',
      { heap: { status: 'pass', fault: 'commit' } },
      `${at}heap.fault`,
      'commit is only for a timeout',
    ],
    [
      'threadgroups overlapping on a pass',
      { 'threadgroup-memory': { status: 'pass', provenThreadgroupMemory: 32768, fault: 'threadgroups-overlap' } },
      `${at}threadgroup-memory.fault`,
      'threadgroups-overlap is only for a wrong-result with provenThreadgroupMemory (where the overlap starts)',
    ],
    [
      'threadgroups overlapping without where',
      { 'threadgroup-memory': { status: 'wrong-result', fault: 'threadgroups-overlap' } },
      `${at}threadgroup-memory.fault`,
      'threadgroups-overlap is only for a wrong-result with provenThreadgroupMemory (where the overlap starts)',
    ],
  ])('rejects %s', (_what, recorded, field, says) => {
    expect(rejected(withDoctor(recorded))).toEqual(rejection(field, says));
  });

  it('accepts each simulated fault where it belongs', () => {
    const recorded = {
      'threadgroup-memory': { status: 'pass', provenThreadgroupMemory: 32768, fault: 'answered-limit' },
      bfloat: { status: 'timeout', fault: 'compile' },
      heap: { status: 'timeout', fault: 'commit' },
    };
    const s = withDoctor(recorded);
    expect(validateSimulation(s, 'test').devices[0]!.doctor).toEqual(section(recorded));
    const overlap = withDoctor({
      'threadgroup-memory': { status: 'wrong-result', provenThreadgroupMemory: 32768, fault: 'threadgroups-overlap' },
    });
    expect(validateSimulation(overlap, 'test')).toEqual(overlap);
  });
});

describe('subclassOf chains', () => {
  const LOOP = 'must not lead back into a loop of subclassOf links';

  it('a device may subclass another device’s class, either way round', () => {
    const s = twoGpus();
    s.devices[1].simulation.subclassOf = s.devices[0].className;
    s.defaultDevice = 1;
    expect(validateSimulation(s, 'test')).toEqual(s);
    const first = twoGpus();
    first.devices[0].simulation.subclassOf = first.devices[1].className;
    expect(validateSimulation(first, 'test')).toEqual(first);
  });

  it('a chain that ends at a class no device has is that device’s error, not a loop', () => {
    const s = twoGpus();
    s.devices[0].simulation.subclassOf = s.devices[1].className;
    s.devices[1].simulation.subclassOf = 'Elsewhere';
    expect(rejected(s)).toEqual(rejection('devices[1].simulation.subclassOf', "must name another device's className"));
  });

  it('loops are refused, however long', () => {
    const pair = twoGpus();
    pair.devices[0].simulation.subclassOf = pair.devices[1].className;
    pair.devices[1].simulation.subclassOf = pair.devices[0].className;
    expect(rejected(pair)).toEqual(rejection('devices[0].simulation.subclassOf', LOOP));
    const three = twoGpus();
    three.devices.push({ ...structuredClone(three.devices[0]), className: 'ThirdDevice' });
    three.devices[0].simulation.subclassOf = three.devices[1].className;
    three.devices[1].simulation.subclassOf = 'ThirdDevice';
    three.devices[2].simulation.subclassOf = three.devices[1].className;
    expect(rejected(three)).toEqual(rejection('devices[0].simulation.subclassOf', LOOP));
  });

  /** `n` devices, each its own class (Device0 … Device<n-1>), device i subclassing `parent(i)` (or nothing). */
  function chain(n: number, parent: (i: number) => number | null): Record<string, any> {
    const s = guest();
    const template = s.devices[0];
    s.devices = Array.from({ length: n }, (_, i) => {
      const p = parent(i);
      return {
        ...template,
        className: `Device${i}`,
        registryId: i,
        simulation: p === null ? {} : { subclassOf: `Device${p}` },
      };
    });
    s.defaultDevice = 0;
    return s;
  }

  it('a chain through every device of the most a snapshot may have is one pass', () => {
    expect(
      validateSimulation(
        chain(64, (i) => (i === 0 ? null : i - 1)),
        'test',
      ).devices,
    ).toHaveLength(64);
  });

  it('a link leads to the first device with that class, as the simulation resolves it', () => {
    const s = chain(3, (i) => [1, null, 0][i]!);
    s.devices[2].className = 'Device1';
    expect(validateSimulation(s, 'test').devices).toHaveLength(3);
  });

  it('agrees with walking every chain one link at a time, on every graph of up to 5 devices with one parent each', () => {
    for (let n = 1; n <= 5; n++) {
      const choices = n + 1; // a parent index, or none
      for (let code = 0; code < choices ** n; code++) {
        const parents = Array.from({ length: n }, (_, i) => Math.floor(code / choices ** i) % choices);
        const parentOf = (i: number) => (parents[i] === n ? null : parents[i]!);
        // Self-links are another rule (a class cannot subclass itself); leave them out here.
        if (parents.some((p, i) => p === i)) continue;
        const naive = (start: number) => {
          let at: number | null = start;
          for (let links = 0; at !== null; links++) {
            if (links > n) return true;
            at = parentOf(at);
          }
          return false;
        };
        const firstLooping = parents.findIndex((_, i) => naive(i));
        const s = chain(n, parentOf);
        if (firstLooping < 0) expect(validateSimulation(s, 'test').devices).toHaveLength(n);
        else expect(rejected(s)).toEqual(rejection(`devices[${firstLooping}].simulation.subclassOf`, LOOP));
      }
    }
  });
});
