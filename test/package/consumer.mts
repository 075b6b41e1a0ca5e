// A strict TypeScript consumer of the packed package (scripts/check/check-package.mjs compiles it with `tsc --strict`
// against the installed tarball, then runs it). Each result narrows on its flag with no `!`; an error code that the
// package never throws does not compile (the `@ts-expect-error` lines fail the build if they ever compile cleanly).
import {
  applyProfile,
  audit,
  buildMatrix,
  doctor,
  fieldReport,
  InvalidReportError,
  MetalCapShimError,
  NativeError,
  probe,
  RefusedError,
  restore,
  SnapshotNotFoundError,
  status,
  type ApplyFailureReason,
  type ErrorCode,
  type UnsupportedReason,
} from 'metal-cap-shim';
import { loadSnapshot, probeSnapshot } from 'metal-cap-shim/tables';

const seen: Record<string, unknown> = {};

// An optional option given as undefined compiles under exactOptionalPropertyTypes, as the checks accept it.
const applied = applyProfile('cua-release', { force: undefined });
// @ts-expect-error timeoutMs is only for 'auto'
void (() => applyProfile('cua-release', { timeoutMs: 100 }));
if (applied.applied) {
  const ok: true = applied.verification.ok;
  seen.apply = {
    ok,
    devices: applied.after.devices.length + applied.before.devices.length,
    reason: applied.reason satisfies null,
  };
} else {
  const reason: ApplyFailureReason = applied.reason;
  const detail: string = applied.detail;
  seen.apply = { reason, detail: detail.length > 0 };
}
// @ts-expect-error without narrowing, verification may be null
seen.unnarrowed = () => applied.verification.ok;

const report = probe();
if (report.supported) {
  const model: string | null = report.host.model;
  seen.probe = { model, reason: report.reason satisfies null };
} else {
  const reason: UnsupportedReason = report.reason;
  const detail: string = report.detail;
  seen.probe = { reason, detail: detail.length > 0, devices: report.devices.length };
}

// doctor() narrows on `supported` like probe(), and its patchedRun on `ran`.
const checkup = await doctor({ probes: ['bfloat'], cache: false });
if (checkup.supported) {
  const model: string | null = checkup.host.model;
  seen.doctor = { model, reason: checkup.reason satisfies null, devices: checkup.devices.length };
} else {
  const reason: UnsupportedReason = checkup.reason;
  const detail: string = checkup.detail;
  const why: string = checkup.patchedRun.why;
  seen.doctor = { reason, detail: detail.length > 0, why: why.length > 0, devices: checkup.devices.length satisfies 0 };
}
// @ts-expect-error without narrowing, host may be null
seen.doctorUnnarrowed = () => checkup.host.model;
const replayed = await doctor({ snapshot: 'vz-guest-m1-ultra-tahoe-stock' });
if (replayed.supported) seen.doctorReplay = replayed.host.model;
if (!replayed.patchedRun.ran) seen.doctorReplayWhy = replayed.patchedRun.why satisfies string;

const offline = probeSnapshot('vz-guest-m1-ultra-tahoe-stock');
seen.snapshotHost = offline.host.model;
// The tables entry shares the root's instance: what it throws is the root's class.
try {
  loadSnapshot('no-such-snapshot');
} catch (err) {
  seen.tablesError = err instanceof SnapshotNotFoundError ? err.code : 'another class';
}

const restored = restore();
seen.restore = restored.restored ? restored.verification.ok : restored.reason;

const result = audit({ snapshot: 'vz-guest-m1-ultra-tahoe-stock' });
if (result.mode === 'live' && !result.refused) {
  seen.live = result.verification.apply.ok && result.verification.restore.ok;
} else if (result.mode === 'offline') {
  const snapshot: string = result.snapshot;
  seen.audit = {
    snapshot,
    verification: result.verification satisfies null,
    ok: result.verdict.ok,
    summary: result.verdict.summary,
  };
}

const s = status();
seen.status = s.active ? s.profile.name : (s.profile satisfies null);

function codeOf(err: unknown): ErrorCode | null {
  if (!(err instanceof MetalCapShimError)) return null;
  if (err.code === 'ERR_INVALID_PROFILE') return err.code;
  // @ts-expect-error not a code this package throws
  if (err.code === 'ERR_NO_SUCH_CODE') return null;
  return err.code;
}

// Each subclass narrows `code` to its own codes.
function nativeCode(
  err: NativeError,
):
  | 'ERR_HOOK_FAILED'
  | 'ERR_VERIFICATION_FAILED'
  | 'ERR_NO_DEVICE'
  | 'ERR_NATIVE_UNAVAILABLE'
  | 'ERR_DOCTOR_RUNNER'
  | 'ERR_CHILD_HOST' {
  // @ts-expect-error a NativeError never carries a usage code
  if (err.code === 'ERR_USAGE') throw err;
  return err.code;
}
function refusedCode(
  err: RefusedError,
):
  | 'ERR_REFUSED_BARE_METAL'
  | 'ERR_INJECTION_BLOCKED'
  | 'ERR_HOST_UNKNOWN'
  | 'ERR_MLX_ARCHITECTURE_REFUSED'
  | 'ERR_ABOVE_HARDWARE' {
  // @ts-expect-error a RefusedError never carries a usage code
  if (err.code === 'ERR_USAGE') throw err;
  return err.code;
}
seen.subclassCodes = [nativeCode(new NativeError('ERR_NO_DEVICE', 'x')), refusedCode(new RefusedError('x'))];

try {
  // @ts-expect-error a misspelt name does not compile (at run time: ERR_INVALID_PROFILE)
  applyProfile('no-such-profile');
} catch (err) {
  seen.invalidProfile = codeOf(err);
}

// buildMatrix takes what fieldReport returns, and { where, report } for a report read from a file.
const fresh = await fieldReport({ snapshot: 'vz-guest-m1-ultra-tahoe-stock', hostLabel: 'type test' });
const matrix = buildMatrix([fresh, { where: 'copy.json', report: JSON.parse(JSON.stringify(fresh)) as unknown }]);
seen.matrix = {
  rows: matrix.rows.length,
  cell: matrix.rows[0]?.cells['host-family']?.reports,
  duplicates: matrix.duplicates,
};

try {
  buildMatrix([{ where: 'bad.json', report: { schema: 'nope' } }]);
} catch (err) {
  seen.invalidReport = err instanceof InvalidReportError ? [err.code, err.field] : 'other';
}

console.log(JSON.stringify(seen));
