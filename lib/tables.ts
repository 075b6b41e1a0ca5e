/**
 * `metal-cap-shim/tables`: the tables and small helpers behind the root's verbs, for programs that want the data
 * itself (the family names, the engines' rule tables, the chip table, doctor's vocabulary, snapshot files, the
 * offline prediction of a profile's answers). The root (`metal-cap-shim`) holds the verbs, the profiles, the errors
 * and every type, these included. Both entries share one module instance: an error thrown here is the root's class.
 *
 * The helpers take their arguments from other people's programs, so each is checked here as the root's verbs check
 * theirs (CONTRIBUTING.md, "Checking input"): read once, and a wrong type is the package's typed error naming the
 * argument, never a TypeError from inside. The package's own callers use the unchecked functions of each module.
 */
import { InvalidOptionsError } from './core/errors.js';
import { describeValue, isObject, readInput } from './core/input.js';
import { checkOptions, optionFailure } from './core/options.js';
import * as chips from './device/chips.js';
import * as snapshots from './device/snapshots.js';
import type { DeviceReport } from './device/types.js';
import {
  checkDevice,
  checkHost,
  checkOllamaRelease,
  ollamaLlamaCpp,
  type GatePrediction,
  type OllamaLlamaCpp,
} from './engines/index.js';
import * as audit from './audit/audit.js';
import * as profiles from './patch/profiles.js';
import * as plan from './patch/plan.js';
import { resolveProfile } from './patch/profiles.js';

export { FAMILY_NAMES, FAMILY_VALUES } from './core/families.js';
export { CHIP_ARCHITECTURES, CHIP_FAMILIES, CHIP_GPU_GENERATIONS } from './device/chips.js';
export { SIMD_RULES } from './device/report.js';
export {
  ENGINES,
  LLAMA_CPP_RULE_SET_INFO,
  LLAMA_CPP_RULE_SETS,
  MLX_RULE_SET_INFO,
  MLX_RULE_SETS,
  MLX_SWITCHES,
  OLLAMA_METAL_PATCHES,
  OLLAMA_RELEASE_REGISTRY,
  RULE_TABLES,
} from './engines/index.js';
export { HOST_VALUE } from './patch/profiles.js';
export { ABOVE_HARDWARE_REFERENCE } from './patch/plan.js';
export { AUTO_PROFILE, resolveAutoProfile } from './select/auto.js';
export {
  CAPABILITY_PROBE_IDS,
  doctorCacheDir,
  DOCTOR_PROBE_IDS,
  DOCTOR_SCHEMA,
  DOCTOR_STATUSES,
  JUDGEMENTS,
} from './doctor/index.js';
export { probeSnapshot } from './device/probe.js';
export { listSnapshots, loadSnapshot, SNAPSHOT_LIMITS } from './device/snapshots.js';

/**
 * What an Ollama release (`v0.32.15` or `0.32.15`) builds, the llama.cpp rule set that follows and the op gates its
 * patches set, as `audit({ ollamaRelease })` uses them; InvalidOptionsError for a release OLLAMA_RELEASE_REGISTRY does
 * not cover, naming the nearest.
 */
export function ollamaRelease(release: string): OllamaLlamaCpp {
  return ollamaLlamaCpp(checkOllamaRelease(read('ollamaRelease', 'release', release), 'release'));
}

/** `value` read once into plain data; a getter or Proxy trap that throws is an InvalidOptionsError naming `field`. */
function read(fn: string, field: string, value: unknown): unknown {
  return readInput(value, optionFailure(fn), {}, field);
}

function textOrNull(fn: string, field: string, value: unknown): string | null {
  const v = read(fn, field, value);
  if (v === null || typeof v === 'string') return v;
  throw new InvalidOptionsError(field, `${fn}() takes ${field} as a string or null, got ${describeValue(v)}`);
}

function deviceList(fn: string, field: string, value: unknown): DeviceReport[] {
  const v = read(fn, field, value);
  if (!Array.isArray(v)) {
    throw new InvalidOptionsError(
      field,
      `${fn}() takes ${field} as an array of DeviceReports, got ${describeValue(v)}`,
    );
  }
  return v.map((d, i) => checkDevice(d, `${field}[${i}]`));
}

/** A prediction as gateValues reads it: its `flags` (MLX's values, llama.cpp's flags), each an object with a `value`. */
function checkPrediction(value: unknown): GatePrediction {
  const p = read('gateValues', 'prediction', value);
  const entries = (o: unknown) => (isObject(o) ? Object.entries(o) : null);
  const fields = isObject(p) ? entries(p.flags) : null;
  const bad = fields?.find(([, v]) => !isObject(v) || !('value' in v));
  if (fields === null || fields === undefined || bad !== undefined) {
    throw new InvalidOptionsError(
      'prediction',
      `gateValues() takes what predictGates() returned${bad === undefined ? '' : ` (${bad[0]} has no value)`}, got ${describeValue(p)}`,
    );
  }
  return p as unknown as GatePrediction;
}

/** The Apple chip a `machdep.cpu.brand_string` names ("Apple M1" from "Apple M1 (Virtual)"), or null for any other. */
export const chipFromBrand: typeof chips.chipFromBrand = (brand) =>
  chips.chipFromBrand(textOrNull('chipFromBrand', 'brand', brand));

/** A chip's true Apple family as an MTLGPUFamily value (1007 for an M1), or null when the table does not have it. */
export const chipFamily: typeof chips.chipFamily = (chip) => chips.chipFamily(textOrNull('chipFamily', 'chip', chip));

/** Flattens a prediction into flag → value, for comparing two predictions. */
export const gateValues: typeof audit.gateValues = (prediction) => audit.gateValues(checkPrediction(prediction));

/** A profile with its `'host'` values replaced by this host's chip and family, or why it cannot be (host-unknown). */
export const bindToHost: typeof profiles.bindToHost = (profile, host) =>
  profiles.bindToHost(resolveProfile(profile), checkHost(read('bindToHost', 'host', host)));

/** The name a bound profile makes every device answer, or null when it leaves names alone. */
export const patchedName: typeof profiles.patchedName = (profile) => profiles.patchedName(resolveProfile(profile));

/** What a device answering `stock` answers under a bound profile. */
export const predictPatchedDevice: typeof profiles.predictPatchedDevice = (stock, profile) =>
  profiles.predictPatchedDevice(
    checkDevice(read('predictPatchedDevice', 'stock', stock), 'stock'),
    resolveProfile(profile),
  );

/**
 * The llama.cpp rule sets under which the plan refuses a profile on the stock guest (ABOVE_HARDWARE_REFERENCE): the
 * release would ask for more threadgroup memory than any Apple GPU has.
 */
export const aboveHardwareRuleSets: typeof plan.aboveHardwareRuleSets = (profile) =>
  plan.aboveHardwareRuleSets(resolveProfile(profile));

/** Every answer that differs between two lists of devices (matched by index and class). */
export const diffAnswers: typeof profiles.diffAnswers = (before, after) =>
  profiles.diffAnswers(deviceList('diffAnswers', 'before', before), deviceList('diffAnswers', 'after', after));

/** Checks a snapshot (parsed JSON, or a field report) and returns it typed; throws InvalidSnapshotError naming the field. */
export const validateSnapshot: typeof snapshots.validateSnapshot = (input, name, limits) => {
  const where = name === undefined ? undefined : read('validateSnapshot', 'name', name);
  if (where !== undefined && typeof where !== 'string') {
    throw new InvalidOptionsError('name', `validateSnapshot() takes name as a string, got ${describeValue(where)}`);
  }
  const o = checkOptions<{ maxDevices?: number }>('validateSnapshot', limits, { maxDevices: 'number' });
  if (o.maxDevices !== undefined && !(Number.isSafeInteger(o.maxDevices) && o.maxDevices >= 1)) {
    throw new InvalidOptionsError(
      'maxDevices',
      `validateSnapshot() option 'maxDevices' must be a whole number from 1, got ${describeValue(o.maxDevices)}`,
    );
  }
  return snapshots.validateSnapshot(
    input,
    where,
    o.maxDevices === undefined ? undefined : { maxDevices: o.maxDevices },
  );
};

/** The report a snapshot gives (`probe --snapshot`): its default device, or every device with `allDevices`. */
export const reportFromSnapshot: typeof snapshots.reportFromSnapshot = (snapshot, options) => {
  const { allDevices = false } = checkOptions<{ allDevices?: boolean }>('reportFromSnapshot', options, {
    allDevices: 'boolean',
  });
  return snapshots.reportFromSnapshot(snapshots.validateSnapshot(snapshot), { allDevices });
};

/** The CLI's exit codes, one table for every command (`exec` passes the program's through; its own are EXEC_EXIT). */
export { EXEC_EXIT, EXIT, EXIT_TABLE } from './cli/exit.js';
