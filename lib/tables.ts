/**
 * `metal-cap-shim/tables`: the tables and small helpers behind the root's verbs, for programs that want the data
 * itself (the family names, the engines' rule tables, the chip table, doctor's vocabulary, snapshot files, the
 * offline prediction of a profile's answers). The root (`metal-cap-shim`) holds the verbs, the profiles, the errors
 * and every type, these included. Both entries share one module instance: an error thrown here is the root's class.
 */
export { FAMILY_NAMES, FAMILY_VALUES } from './core/families.js';
export { CHIP_FAMILIES, chipFamily, chipFromBrand } from './device/chips.js';
export { SIMD_RULES } from './device/report.js';
export { ENGINES, LLAMA_CPP_RULE_SET_INFO, LLAMA_CPP_RULE_SETS, RULE_TABLES } from './engines/index.js';
export { gateValues } from './audit/audit.js';
export { bindToHost, diffAnswers, HOST_VALUE, patchedName, predictPatchedDevice } from './patch/profiles.js';
export { AUTO_PROFILE, resolveAutoProfile } from './apply/auto.js';
export {
  CAPABILITY_PROBE_IDS,
  doctorCacheDir,
  DOCTOR_PROBE_IDS,
  DOCTOR_SCHEMA,
  DOCTOR_STATUSES,
  JUDGEMENTS,
} from './doctor/index.js';
export { probeSnapshot } from './device/probe.js';
export {
  listSnapshots,
  loadSnapshot,
  reportFromSnapshot,
  SNAPSHOT_LIMITS,
  validateSnapshot,
} from './device/snapshots.js';
