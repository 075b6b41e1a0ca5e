// The simulated Metal's own file format (README.md, "Simulation files"): a snapshot plus what only the simulation
// reads, each device's class layout and test aids (`simulation`) and the faults only the simulated GPU can have.
// The shipped snapshot format (lib/device/snapshots.ts) has none of these; a simulation file is tagged with its own
// schema, so the package's readers refuse it and the simulation reads it.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { InvalidSnapshotError } from '../../lib/core/errors.js';
import { isObject } from '../../lib/core/input.js';
import type { DoctorProbeId } from '../../lib/device/doctor-vocabulary.js';
import { CLASS_NAME, count } from '../../lib/device/fields.js';
import { SIMULATION_FILE_SCHEMA } from '../../lib/device/native.js';
import {
  SNAPSHOT_SCHEMA,
  validateSnapshot,
  type Snapshot,
  type SnapshotDevice,
  type SnapshotDoctorProbe,
} from '../../lib/device/snapshots.js';

export const SIMULATION_SCHEMA = SIMULATION_FILE_SCHEMA as 'metal-cap-shim/simulation@1';

/** How the simulation lays out a device's class, and the test aids it offers. */
export interface SimulationLayout {
  /** The class implements the queries itself (default: the simulation's table of classes, else inherited). */
  methodsOnConcreteClass?: boolean;
  /** A query the class lacks. */
  lacks?: (typeof SIMULATED_QUERIES)[number];
  /** The threadgroup-memory answer grows by 16 bytes after this many queries. */
  driftAfter?: number;
  /** The className of another device whose class this one subclasses. */
  subclassOf?: string;
  /** Default device only: MTLCreateSystemDefaultDevice() returns an object of this class in place of the listed one. */
  defaultObjectClass?: string;
  /** The SIMD-group width of the device's pipelines; default 32. */
  threadExecutionWidth?: number;
  /** How long each asynchronous library compile takes, in milliseconds; default 0. */
  compileMs?: number;
  /** How long each command buffer runs after its commit, in milliseconds; default 0. */
  gpuMs?: number;
  /** Once a command buffer has hung, every later one fails with AccessRevoked; default false. */
  revokesAfterTimeout?: boolean;
}

/**
 * The faults only the simulated GPU has: `answered-limit` (threadgroup-memory, with pass): dispatches above the
 * answered maxThreadgroupMemoryLength fail; `threadgroups-overlap` (threadgroup-memory, with wrong-result and
 * provenThreadgroupMemory N): threadgroups running at once corrupt each other above N bytes; `compile` (any probe,
 * with timeout): the compiler never finishes the probe's library; `commit` (any probe, with timeout): committing the
 * probe's command buffer never returns.
 */
export const SIMULATED_FAULTS = ['answered-limit', 'threadgroups-overlap', 'compile', 'commit'] as const;
export type SimulatedFault = (typeof SIMULATED_FAULTS)[number];

/** Queries a simulated device class can be made to lack. */
export const SIMULATED_QUERIES = [
  'supportsFamily:',
  'maxThreadgroupMemoryLength',
  'recommendedMaxWorkingSetSize',
] as const;

export type SimulationProbe = Omit<SnapshotDoctorProbe, 'fault'> & {
  fault?: SnapshotDoctorProbe['fault'] | SimulatedFault;
};

export interface SimulationDevice extends Omit<SnapshotDevice, 'doctor'> {
  simulation?: SimulationLayout;
  doctor?: { provenance: string; probes: Record<DoctorProbeId, SimulationProbe> };
}

/** A simulation file: a snapshot's fields, its own schema, and devices that may carry the extension. */
export interface Simulation extends Omit<Snapshot, 'schema' | 'devices'> {
  schema: typeof SIMULATION_SCHEMA | typeof SNAPSHOT_SCHEMA;
  devices: SimulationDevice[];
}

const isSimulatedFault = (v: unknown): v is SimulatedFault => SIMULATED_FAULTS.includes(v as SimulatedFault);

/** True when a device or one of its probes uses the extension. */
function extended(device: SimulationDevice): boolean {
  return (
    device.simulation !== undefined ||
    Object.values(device.doctor?.probes ?? {}).some((p) => isObject(p) && isSimulatedFault(p.fault))
  );
}

/** The snapshot a simulation stands for: the extension removed, the snapshot schema. */
export function snapshotOf(sim: Simulation): Snapshot {
  const devices = sim.devices.map((device) => {
    const { simulation: _, ...rest } = device;
    if (!rest.doctor) return rest as SnapshotDevice;
    const probes = Object.fromEntries(
      Object.entries(rest.doctor.probes).map(([id, p]) => {
        if (!isObject(p) || !isSimulatedFault(p.fault)) return [id, p];
        const { fault: __, ...probe } = p;
        return [id, probe];
      }),
    );
    return { ...rest, doctor: { ...rest.doctor, probes } } as SnapshotDevice;
  });
  return { ...sim, schema: SNAPSHOT_SCHEMA, devices } as Snapshot;
}

function fail(where: string, field: string, message: string): never {
  throw new InvalidSnapshotError(field, `${where}: ${field} ${message}; see test/sim-metal/README.md for the format`);
}

/**
 * The devices whose `subclassOf` chain runs into a loop of classes (the simulated Metal cannot make a class its own
 * superclass, however many links away). A link leads to the first device with that className, as the simulation
 * resolves it. Each device is visited once: a walk stops at a device whose answer is known, so the check is linear.
 */
export function devicesInSubclassLoops(devices: readonly SimulationDevice[]): Set<number> {
  const byClass = new Map<unknown, number>();
  devices.forEach((d, i) => {
    if (!byClass.has(d.className)) byClass.set(d.className, i);
  });
  const parentOf = (i: number): number | undefined => {
    const link = devices[i]!.simulation?.subclassOf;
    return link === undefined ? undefined : byClass.get(link);
  };
  const UNVISITED = 0,
    WALKING = 1,
    NO_LOOP = 2,
    LOOP = 3;
  const state = new Uint8Array(devices.length);
  const chain: number[] = [];
  for (let start = 0; start < devices.length; start++) {
    let at: number | undefined = start;
    while (at !== undefined && state[at] === UNVISITED) {
      state[at] = WALKING;
      chain.push(at);
      at = parentOf(at);
    }
    const answer = at === undefined ? NO_LOOP : state[at] === WALKING ? LOOP : state[at]!;
    for (const i of chain) state[i] = answer;
    chain.length = 0;
  }
  const loops = new Set<number>();
  state.forEach((s, i) => {
    if (s === LOOP) loops.add(i);
  });
  return loops;
}

const LAYOUT_CHECKS: Record<keyof SimulationLayout, (v: unknown) => string | null> = {
  methodsOnConcreteClass: (v) => (typeof v === 'boolean' ? null : 'true or false'),
  lacks: (v) =>
    SIMULATED_QUERIES.includes(v as (typeof SIMULATED_QUERIES)[number])
      ? null
      : `one of ${SIMULATED_QUERIES.join(', ')}`,
  driftAfter: (v) => (count(0)(v) === null ? null : 'an integer ≥ 0'),
  subclassOf: (v) => (typeof v === 'string' ? null : "another device's className"),
  defaultObjectClass: (v) =>
    typeof v === 'string' && CLASS_NAME.test(v) ? null : 'an Objective-C class name no device has',
  threadExecutionWidth: (v) => (count(1)(v) === null ? null : 'an integer ≥ 1'),
  compileMs: (v) =>
    Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) <= 60_000
      ? null
      : 'an integer from 0 to 60000 (milliseconds)',
  gpuMs: (v) =>
    Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) <= 60_000
      ? null
      : 'an integer from 0 to 60000 (milliseconds)',
  revokesAfterTimeout: (v) => (typeof v === 'boolean' ? null : 'true or false'),
};

function checkFault(where: string, prefix: string, id: string, probe: SimulationProbe): void {
  const fault = probe.fault as SimulatedFault;
  const hang = fault === 'compile' || fault === 'commit';
  if (hang && probe.status !== 'timeout') fail(where, `${prefix}fault`, `${fault} is only for a timeout`);
  if (!hang && id !== 'threadgroup-memory') fail(where, `${prefix}fault`, `${fault} is only for threadgroup-memory`);
  if (fault === 'answered-limit' && probe.status !== 'pass') fail(where, `${prefix}fault`, 'is only for a pass');
  if (
    fault === 'threadgroups-overlap' &&
    (probe.status !== 'wrong-result' || typeof probe.provenThreadgroupMemory !== 'number')
  ) {
    fail(
      where,
      `${prefix}fault`,
      'threadgroups-overlap is only for a wrong-result with provenThreadgroupMemory (where the overlap starts)',
    );
  }
}

/**
 * Validates parsed JSON as a simulation file (or a plain snapshot): the snapshot it stands for with the package's
 * validateSnapshot, then the extension. Throws InvalidSnapshotError naming the field.
 */
export function validateSimulation(input: unknown, where = 'simulation'): Simulation {
  if (!isObject(input) || (input.schema !== SIMULATION_SCHEMA && input.schema !== SNAPSHOT_SCHEMA))
    fail(where, 'schema', `must be "${SIMULATION_SCHEMA}" (or "${SNAPSHOT_SCHEMA}")`);
  const sim = input as unknown as Simulation;
  if (!Array.isArray(sim.devices)) fail(where, 'devices', 'must be a non-empty array');
  sim.devices.forEach((device, i) => {
    if (!isObject(device)) return;
    const prefix = `devices[${i}].`;
    if (extended(device) && sim.schema !== SIMULATION_SCHEMA) {
      fail(where, 'schema', `must be "${SIMULATION_SCHEMA}": devices[${i}] uses the simulation's extension`);
    }
    if ('simulation' in device && !isObject(device.simulation)) fail(where, `${prefix}simulation`, 'must be an object');
  });
  validateSnapshot(snapshotOf(sim), where);
  const classNames = new Set(sim.devices.map((d) => d.className));
  const loops = devicesInSubclassLoops(sim.devices);
  sim.devices.forEach((device, i) => {
    const prefix = `devices[${i}].`;
    for (const [id, probe] of Object.entries(device.doctor?.probes ?? {})) {
      if (isSimulatedFault(probe.fault)) checkFault(where, `${prefix}doctor.probes.${id}.`, id, probe);
    }
    const layout = device.simulation;
    if (layout === undefined) return;
    for (const [key, value] of Object.entries(layout)) {
      const check = LAYOUT_CHECKS[key as keyof SimulationLayout];
      if (check === undefined) fail(where, `${prefix}simulation.${key}`, 'is not a known field');
      const problem = check(value);
      if (problem !== null) fail(where, `${prefix}simulation.${key}`, `must be ${problem}`);
    }
    if (layout.subclassOf !== undefined) {
      if (layout.subclassOf === device.className || !classNames.has(layout.subclassOf))
        fail(where, `${prefix}simulation.subclassOf`, "must name another device's className");
      if (loops.has(i))
        fail(where, `${prefix}simulation.subclassOf`, 'must not lead back into a loop of subclassOf links');
    }
    if (layout.defaultObjectClass !== undefined) {
      if (classNames.has(layout.defaultObjectClass))
        fail(where, `${prefix}simulation.defaultObjectClass`, 'must be an Objective-C class name no device has');
      if (i !== sim.defaultDevice)
        fail(where, `${prefix}simulation.defaultObjectClass`, 'belongs on the default device only');
    }
  });
  return sim;
}

/**
 * A simulation as the JSON text of its file, validated: tagged with the simulation's schema when a device uses the
 * extension, else with the snapshot's, so a file without the extension also serves `--snapshot`.
 */
export function simulationJson(sim: Simulation, name: string = sim.id): string {
  const tagged = { ...sim, schema: sim.devices.some(extended) ? SIMULATION_SCHEMA : SNAPSHOT_SCHEMA };
  validateSimulation(tagged, name);
  return JSON.stringify(tagged);
}

/** Writes a simulation (simulationJson) to a fresh private file `name`.json and returns its path. */
export function writeSimulation(sim: Simulation, name: string = sim.id): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'mcs-sim-')), `${name}.json`);
  writeFileSync(file, simulationJson(sim, name));
  return file;
}
