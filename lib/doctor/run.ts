/**
 * A live doctor run. The probes run in a child process (runner.ts, started from dist/doctor-runner.js), never in the
 * caller's: a hung GPU, a device Metal revoked, an abort() in Metal's debug layer or a crash ends the runner, and this
 * file reports it as the outcome of the probe that was running. It enforces the deadline from outside, then judges and
 * caches. The caller's own Metal devices and patch state are never touched.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { InvalidOptionsError, NativeError } from '../core/errors.js';
import { escapeControl } from '../core/escape.js';
import { describeValue, isObject } from '../core/input.js';
import { checkDevice, checkHost } from '../engines/index.js';
import { childHostError, hostProcess, nodeChildStart, startNodeChild, type HostProcess } from '../core/node-child.js';
import { packageRoot, packageVersion, SIM_SNAPSHOT_ENV } from '../device/native.js';
import type { CapabilityReport, DeviceReport, SupportedReport, UnsupportedReason } from '../device/types.js';
import type { NativeProbeOutcome } from '../../types/binding.js';
import { cacheKeyFor, writeCache } from './cache.js';
import { assessDevice } from './derive.js';
import { judgeProbe, runFrom } from './judge.js';
import { candidateFor, type CheckedDoctorOptions } from './options.js';
import type { ApplyWarning } from '../patch/plan.js';
import {
  CAPABILITY_PROBE_IDS,
  DOCTOR_PROBE_IDS,
  DOCTOR_STATUSES,
  probeBudgetFor,
  probeBudgetMs,
  RUNNER_START_MS,
  type DoctorProbeId,
  type DoctorStatus,
} from './probes.js';
import { runnerOutcome, type RunKind, type RunnerMessage } from './runner.js';
import {
  DOCTOR_SCHEMA,
  type DoctorDevice,
  type DoctorProgress,
  type DoctorReport,
  type DoctorRun,
  type PatchedRun,
} from './types.js';

function notRun(detail: string): DoctorRun {
  return {
    status: 'skipped',
    detail,
    ms: null,
    compileMs: null,
    provenThreadgroupMemory: null,
    acceptedThreadgroupMemory: null,
    failedThreadgroupMemory: null,
    bufferLength: null,
    maxAbsError: null,
  };
}

function baseReport(
  o: CheckedDoctorOptions,
  generatedAt: string,
  warnings: ApplyWarning[] = [],
): Pick<
  DoctorReport,
  'schema' | 'packageVersion' | 'generatedAt' | 'replayed' | 'candidateProfile' | 'candidateWarnings' | 'settings'
> {
  return {
    schema: DOCTOR_SCHEMA,
    packageVersion: packageVersion(),
    generatedAt,
    replayed: false,
    candidateProfile: o.candidate,
    candidateWarnings: warnings,
    settings: {
      probes: o.probes,
      timeoutMs: o.timeoutMs,
      mmapFile: o.probes.includes('nocopy-mmap') ? o.mmapFile : null,
      mmapSize: o.probes.includes('nocopy-mmap') && o.mmapFile === null ? o.mmapSize : null,
      device: o.device,
      allowAboveHardware: o.allowAboveHardware,
    },
  };
}

function unsupported(
  o: CheckedDoctorOptions,
  generatedAt: string,
  reason: UnsupportedReason,
  detail: string,
  report: CapabilityReport | null,
): DoctorReport {
  return {
    ...baseReport(o, generatedAt),
    supported: false,
    reason,
    detail,
    source: report?.source ?? 'none',
    snapshot: report?.snapshot ?? null,
    host: report?.host ?? null,
    patchedRun: { ran: false, why: detail },
    devices: [],
    restore: null,
    cache: null,
  };
}

/** Told as each probe starts: which device (of how many), which probe, and whether it is the stock or patched run. */
export type ProbeListener = (event: DoctorProgress) => void;

/** The runner's entry: built from lib/doctor/runner-main.ts beside the CLI. */
export function runnerPath(): string {
  return path.join(packageRoot(), 'dist', 'doctor-runner.js');
}

/**
 * The runner's environment: the caller's, without what would patch or inject into it (NODE_OPTIONS may preload
 * metal-cap-shim/register; DYLD_INSERT_LIBRARIES and LD_PRELOAD may hold exec's injector, whose METAL_CAP_SHIM_*
 * variables go too, except the simulation's), so it measures stock answers; with ELECTRON_RUN_AS_NODE=1, so an Electron
 * binary whose RunAsNode fuse is on runs the runner as Node (nodeChildStart decides where that start is used at all).
 */
export function runnerEnvironment(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(env)) {
    const ours = key.startsWith('METAL_CAP_SHIM_') && !key.startsWith(SIM_SNAPSHOT_ENV.replace(/SNAPSHOT$/, ''));
    if (ours || key === 'NODE_OPTIONS' || key === 'DYLD_INSERT_LIBRARIES' || key === 'LD_PRELOAD') continue;
    out[key] = value;
  }
  out.ELECTRON_RUN_AS_NODE = '1';
  return out;
}

const MESSAGE_TYPES: ReadonlySet<string> = new Set<RunnerMessage['type']>([
  'unsupported',
  'stock',
  'no-such-device',
  'start',
  'outcome',
  'patched',
  'restored',
  'done',
]);

/**
 * A line of the runner's output as a message, or null for anything else (a library may print on standard output).
 * A line of a known type is checked to the shape the parent reads (checkRunnerMessage): a wrong one is an
 * ERR_DOCTOR_RUNNER NativeError, never a TypeError from inside.
 */
export function parseRunnerLine(line: string): RunnerMessage | null {
  if (!line.startsWith('{"type":')) return null;
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return null;
  }
  if (!isObject(value) || typeof value.type !== 'string' || !MESSAGE_TYPES.has(value.type)) return null;
  return checkRunnerMessage(value);
}

const RUN_KINDS: readonly unknown[] = ['stock', 'patched'];
const NUMBER_OR_NULL_FIELDS = [
  'commandBufferError',
  'provenThreadgroupMemory',
  'acceptedThreadgroupMemory',
  'failedThreadgroupMemory',
  'bufferLength',
  'maxAbsError',
] as const;

/**
 * A runner message of a known type, checked to every field the parent reads: the runner is this package's own, but a
 * library loaded in it may write on its standard output, and a line that looks like a message must not crash the
 * parent. Throws NativeError ERR_DOCTOR_RUNNER naming the field.
 */
export function checkRunnerMessage(m: Record<string, unknown>): RunnerMessage {
  const type = m.type as RunnerMessage['type'];
  const fail = (field: string, what: string, got: unknown): never => {
    throw new NativeError(
      'ERR_DOCTOR_RUNNER',
      `doctor's probe runner wrote a '${type}' line whose ${field} is not ${what} (got ${describeValue(got)}); this process was not touched`,
    );
  };
  const want = (ok: boolean, field: string, what: string, got: unknown) => {
    if (!ok) fail(field, what, got);
  };
  const count = (v: unknown, field: string) =>
    want(typeof v === 'number' && Number.isSafeInteger(v) && v >= 0, field, 'a whole number ≥ 0', v);
  const text = (v: unknown, field: string) => want(typeof v === 'string', field, 'a string', v);
  const hooks = (v: unknown, field: string) => {
    want(Array.isArray(v), field, 'an array', v);
    for (const [i, h] of (v as unknown[]).entries()) {
      want(isObject(h), `${field}[${i}]`, 'an object', h);
      text((h as Record<string, unknown>).className, `${field}[${i}].className`);
      text((h as Record<string, unknown>).selector, `${field}[${i}].selector`);
    }
  };
  const devices = (v: unknown, field: string) => {
    want(Array.isArray(v), field, 'an array', v);
    for (const [i, d] of (v as unknown[]).entries()) {
      try {
        checkDevice(d, `${field}[${i}]`);
      } catch {
        fail(`${field}[${i}]`, 'a device report', d);
      }
      count((d as Record<string, unknown>).index, `${field}[${i}].index`);
    }
  };
  const report = (v: unknown, field: string) => {
    want(isObject(v), field, 'a capability report', v);
    const r = v as Record<string, unknown>;
    want(typeof r.supported === 'boolean', `${field}.supported`, 'true or false', r.supported);
    if (r.supported !== true) return;
    devices(r.devices, `${field}.devices`);
    try {
      checkHost(r.host);
    } catch {
      fail(`${field}.host`, 'a host or null', r.host);
    }
  };
  switch (type) {
    case 'unsupported':
      text(m.reason, 'reason');
      text(m.detail, 'detail');
      if (m.report !== null) report(m.report, 'report');
      break;
    case 'stock':
      report(m.report, 'report');
      break;
    case 'no-such-device':
      count(m.count, 'count');
      break;
    case 'start':
      count(m.device, 'device');
      count(m.devices, 'devices');
      want(DOCTOR_PROBE_IDS.includes(m.probe as DoctorProbeId), 'probe', 'a probe id', m.probe);
      want(RUN_KINDS.includes(m.run), 'run', 'stock or patched', m.run);
      break;
    case 'outcome': {
      count(m.device, 'device');
      want(RUN_KINDS.includes(m.run), 'run', 'stock or patched', m.run);
      want(isObject(m.outcome), 'outcome', 'an object', m.outcome);
      const o = m.outcome as Record<string, unknown>;
      want(DOCTOR_PROBE_IDS.includes(o.id as DoctorProbeId), 'outcome.id', 'a probe id', o.id);
      want(DOCTOR_STATUSES.includes(o.status as DoctorStatus), 'outcome.status', 'a status', o.status);
      text(o.detail, 'outcome.detail');
      for (const k of ['ms', 'compileMs'] as const)
        want(typeof o[k] === 'number' && Number.isFinite(o[k]) && o[k] >= 0, `outcome.${k}`, 'a number ≥ 0', o[k]);
      for (const k of ['buildFailed', 'gpuTimedOut'] as const)
        want(typeof o[k] === 'boolean', `outcome.${k}`, 'true or false', o[k]);
      for (const k of NUMBER_OR_NULL_FIELDS)
        want(
          o[k] === null || (typeof o[k] === 'number' && Number.isFinite(o[k])),
          `outcome.${k}`,
          'a number or null',
          o[k],
        );
      break;
    }
    case 'patched':
      if (m.devices !== null) devices(m.devices, 'devices');
      want(m.why === null || typeof m.why === 'string', 'why', 'a string or null', m.why);
      break;
    case 'restored':
      hooks(m.restoredHooks, 'restoredHooks');
      hooks(m.conflicts, 'conflicts');
      break;
    case 'done':
      break;
  }
  return m as unknown as RunnerMessage;
}

/** How the runner ended: its exit code or signal, whether the deadline killed it, and the last line it wrote on stderr. */
export interface RunnerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The deadline in milliseconds that passed without a message, when that is why it was killed. */
  killedAfterMs: number | null;
  stderr: string;
}

/** What the runner's messages said, collected as they arrive. */
export class RunnerSession {
  stock: CapabilityReport | null = null;
  unsupported: Extract<RunnerMessage, { type: 'unsupported' }> | null = null;
  devicesFound: number | null = null;
  running: Extract<RunnerMessage, { type: 'start' }> | null = null;
  readonly outcomes = new Map<string, NativeProbeOutcome[]>();
  patched: Extract<RunnerMessage, { type: 'patched' }> | null = null;
  restored: DoctorReport['restore'] = null;
  done = false;

  accept(message: RunnerMessage): void {
    switch (message.type) {
      case 'unsupported':
        this.unsupported = message;
        break;
      case 'stock':
        this.stock = message.report;
        break;
      case 'no-such-device':
        this.devicesFound = message.count;
        break;
      case 'start':
        this.running = message;
        break;
      case 'outcome': {
        const key = `${message.run}:${message.device}`;
        this.outcomes.set(key, [...(this.outcomes.get(key) ?? []), message.outcome]);
        this.running = null;
        break;
      }
      case 'patched':
        this.patched = message;
        break;
      case 'restored':
        this.restored = { restoredHooks: message.restoredHooks, conflicts: message.conflicts };
        break;
      case 'done':
        this.done = true;
    }
  }

  outcomesOf(run: RunKind, device: number): NativeProbeOutcome[] {
    return this.outcomes.get(`${run}:${device}`) ?? [];
  }
}

/**
 * The signal that interrupted the runner from outside, or null: SIGINT or SIGTERM it was not sent by us (a terminal's
 * Ctrl-C and a supervisor's SIGTERM reach the whole process group). Its probe is `interrupted`, which judges nothing.
 */
export function interruptedBy(exit: RunnerExit): NodeJS.Signals | null {
  if (exit.killedAfterMs !== null) return null;
  return exit.signal === 'SIGINT' || exit.signal === 'SIGTERM' ? exit.signal : null;
}

/** How the runner stopped, in words, or null when it finished. */
function stoppedHow(session: RunnerSession, exit: RunnerExit): string | null {
  if (session.done && exit.killedAfterMs === null) return null;
  const last = exit.stderr.trim().split('\n').at(-1)?.trim() ?? '';
  const said = last === '' ? '' : ` (its last words: ${escapeControl(last.slice(0, 300))})`;
  if (exit.killedAfterMs !== null)
    return `was killed (SIGKILL) at the deadline: nothing came from it for ${exit.killedAfterMs} ms${said}`;
  const interrupted = interruptedBy(exit);
  if (interrupted !== null) return `was interrupted (${interrupted})${said}`;
  if (exit.signal !== null) return `died of ${exit.signal}${said}`;
  if (exit.code !== 0) return `exited with code ${exit.code}${said}`;
  // Exit code 0 without the last message: worded without "before", which the sentences around it use.
  return `exited (code 0) without finishing${said}`;
}

/**
 * Every probe's verdict on one device from the runner's outcomes: probes not asked are skipped, an asked probe with no
 * outcome is `missing` (the runner stopped before it: skipped, with why; or an error), and capability probes are judged
 * from both runs when there was a patched run (null: there was none). `device` is the device's stock report.
 */
export function judgeDevice(
  o: CheckedDoctorOptions,
  stockOutcomes: readonly NativeProbeOutcome[],
  patchedOutcomes: readonly NativeProbeOutcome[] | null,
  device?: DeviceReport,
  missing: DoctorRun = { ...notRun('the native runner returned no outcome for it'), status: 'error' },
): DoctorDevice['probes'] {
  const candidate = o.candidate.name ?? 'the candidate profile';
  const runOf = (outcomes: readonly NativeProbeOutcome[], id: DoctorProbeId): DoctorRun => {
    const found = outcomes.find((x) => x.id === id);
    return found ? runFrom(found, device) : missing;
  };
  return DOCTOR_PROBE_IDS.map((id) => {
    if (!o.probes.includes(id)) return judgeProbe(id, notRun('not asked'));
    const stock = runOf(stockOutcomes, id);
    // No second run (patchedRun.why says why): the stock run alone decides.
    if (!CAPABILITY_PROBE_IDS.includes(id) || patchedOutcomes === null) return judgeProbe(id, stock);
    return judgeProbe(id, stock, runOf(patchedOutcomes, id), candidate);
  });
}

/** The report from what the runner said and how it ended. Throws what doctor() throws for the same reasons. */
export function reportFromRunner(
  o: CheckedDoctorOptions,
  session: RunnerSession,
  exit: RunnerExit,
  generatedAt: string,
): DoctorReport {
  if (session.unsupported !== null) {
    const u = session.unsupported;
    return unsupported(o, generatedAt, u.reason, u.detail, u.report);
  }
  if (session.devicesFound !== null) {
    const n = session.devicesFound;
    throw new InvalidOptionsError(
      'device',
      `doctor() option 'device' (--device): there is no device ${o.device}; this machine has ${n} (0–${n - 1})`,
    );
  }
  const how = stoppedHow(session, exit);
  const stock = session.stock;
  if (stock === null || !stock.supported) {
    throw new NativeError(
      'ERR_DOCTOR_RUNNER',
      `doctor's probe runner ${how ?? 'ended'} before it read the devices; nothing ran, and this process was not touched`,
    );
  }
  if (how !== null && session.running !== null) {
    const r = session.running;
    session.accept({
      type: 'outcome',
      device: r.device,
      run: r.run,
      outcome:
        interruptedBy(exit) === null
          ? runnerOutcome(
              r.probe,
              'aborted',
              `the probe runner ${how} while it ran this probe (${r.run} run); this process was not touched`,
            )
          : runnerOutcome(r.probe, 'interrupted', `not judged: the probe runner ${how} while it ran this probe`),
    });
  }
  const missing =
    how === null ? undefined : notRun(`not run: the probe runner stopped before it (it ${how.split(' (')[0]})`);
  const devices = stock.devices.filter((d) => o.device === null || d.index === o.device);
  const patchedDevices = session.patched?.devices ?? null;
  // The candidate as the runner installed it on this host (its fallback, where the host chip is unknown).
  const candidate = candidateFor(o, stock);
  const bound: CheckedDoctorOptions = { ...o, candidate: candidate.profile };
  const assessed = devices.map((d) => {
    const probes = judgeDevice(
      bound,
      session.outcomesOf('stock', d.index),
      patchedDevices === null ? null : session.outcomesOf('patched', d.index),
      d,
      missing,
    );
    const patched = patchedDevices?.find((p) => p.index === d.index) ?? null;
    return assessDevice(d, patched, probes, stock.host, candidate.name, o.force);
  });
  const patchedWhy =
    patchedDevices !== null
      ? null
      : (session.patched?.why ?? `the probe runner ${how ?? 'ended'} before the patched run`);
  // A run without every capability probe proves too little for `auto`: caching it would replace a full result. Nor is
  // a run the runner did not finish.
  const cache =
    o.cache && how === null && asksEveryCapabilityProbe(o.probes) ? writeAll(stock, assessed, generatedAt) : null;
  return {
    ...baseReport(bound, generatedAt, candidate.plan.warnings),
    supported: true,
    reason: null,
    detail: null,
    source: stock.source,
    snapshot: stock.snapshot,
    host: stock.host,
    patchedRun: (patchedWhy === null ? { ran: true, why: null } : { ran: false, why: patchedWhy }) satisfies PatchedRun,
    devices: assessed,
    restore: session.restored,
    cache,
  };
}

/** At most this much of the runner's stderr is kept (its last line names a crash). */
const STDERR_KEPT = 4096;

function runnerFailedToStart(err: Error): NativeError {
  return new NativeError(
    'ERR_DOCTOR_RUNNER',
    `doctor's probe runner could not start (${process.execPath} ${runnerPath()}): ${err.message}`,
  );
}

const RUNNER = "doctor's probe runner";

/**
 * Runs the probes in the runner and reports them: every asked probe with stock answers, the capability probes again
 * with the candidate profile installed there. Between two messages the runner has RUNNER_START_MS (before the first
 * probe) or probeBudgetFor(o, probe) (a probe: probeBudgetMs, and the time to write nocopy-mmap's file); past that it
 * is killed, and the probe it was running is `aborted`. The runner starts as the host allows (nodeChildStart: Electron's
 * main process forks a utility process); where nothing can start it, rejects at once with ERR_CHILD_HOST. The event
 * loop keeps turning meanwhile; `listener` is told as each probe starts.
 */
export function runDoctorLive(
  o: CheckedDoctorOptions,
  listener?: ProbeListener,
  host: HostProcess = hostProcess(),
): Promise<DoctorReport> {
  const generatedAt = new Date().toISOString();
  const start = nodeChildStart(host);
  if (start.how === 'none')
    return Promise.reject(
      childHostError(
        RUNNER,
        start.why,
        'Run `npx metal-cap-shim doctor` once on this machine (profile auto then reads its cached result); in Electron, call doctor() from the main process.',
      ),
    );
  return new Promise((resolve, reject) => {
    const child = startNodeChild(runnerPath(), start, { env: runnerEnvironment(), input: JSON.stringify(o) });
    const session = new RunnerSession();
    let stderr = '';
    let killedAfterMs: number | null = null;
    let timer: NodeJS.Timeout | undefined;
    const arm = (ms: number) => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        killedAfterMs = ms;
        child.kill('SIGKILL');
      }, ms);
    };
    arm(RUNNER_START_MS);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(runnerFailedToStart(err));
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-STDERR_KEPT);
    });
    let malformed: unknown = null;
    createInterface({ input: child.stdout, crlfDelay: Infinity }).on('line', (line) => {
      if (malformed !== null) return;
      let message: RunnerMessage | null;
      try {
        message = parseRunnerLine(line);
      } catch (err) {
        // Nothing it says after that is believed: it is stopped, and the close says why.
        malformed = err;
        child.kill('SIGKILL');
        return;
      }
      if (message === null) return;
      session.accept(message);
      if (message.type === 'start') {
        const { device, devices, probe, run } = message;
        listener?.({ device, devices, probe, run });
      }
      if (message.type === 'done') {
        // Finished: a slow exit now is no probe's, and ends it without unfinishing the run.
        clearTimeout(timer);
        timer = setTimeout(() => child.kill('SIGKILL'), RUNNER_START_MS);
        return;
      }
      arm(
        message.type === 'start'
          ? probeBudgetFor(o, message.probe)
          : message.type === 'stock'
            ? probeBudgetMs(o.timeoutMs)
            : RUNNER_START_MS,
      );
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (malformed !== null) {
        reject(malformed);
        return;
      }
      try {
        resolve(reportFromRunner(o, session, { code, signal, killedAfterMs, stderr }, generatedAt));
      } catch (err) {
        reject(err);
      }
    });
  });
}

/**
 * runDoctorLive for the APIs that must stay synchronous (applyProfile('auto'), register): the runner runs to its end
 * while this thread waits, bounded by the sum of the deadlines runDoctorLive would give it on `devices` devices. Only
 * plain Node can be waited on (nodeChildStart): elsewhere it throws ERR_CHILD_HOST at once, before anything starts.
 */
export function runDoctorLiveSync(o: CheckedDoctorOptions, devices: number, host = hostProcess()): DoctorReport {
  const start = nodeChildStart(host, true);
  if (start.how !== 'spawn')
    throw childHostError(
      RUNNER,
      start.how === 'none' ? start.why : 'it starts only asynchronously here',
      'Profile auto has no cached result to use instead: run `npx metal-cap-shim doctor` once on this machine, or apply a named profile (host-family).',
    );
  const generatedAt = new Date().toISOString();
  const perRun = o.probes.reduce((sum, probe) => sum + probeBudgetFor(o, probe), 0);
  const deadline = RUNNER_START_MS + perRun * 2 * Math.max(1, devices);
  const r = spawnSync(process.execPath, [runnerPath()], {
    input: JSON.stringify(o),
    env: runnerEnvironment(),
    encoding: 'utf8',
    timeout: deadline,
    killSignal: 'SIGKILL',
    maxBuffer: 64 * 1024 * 1024,
    windowsHide: true,
  });
  const timedOut = (r.error as NodeJS.ErrnoException | undefined)?.code === 'ETIMEDOUT';
  if (r.error !== undefined && !timedOut) throw runnerFailedToStart(r.error);
  const session = new RunnerSession();
  for (const line of (r.stdout ?? '').split('\n')) {
    const message = parseRunnerLine(line);
    if (message !== null) session.accept(message);
  }
  const exit: RunnerExit = {
    code: r.status,
    signal: r.signal,
    killedAfterMs: timedOut ? deadline : null,
    stderr: (r.stderr ?? '').slice(-STDERR_KEPT),
  };
  return reportFromRunner(o, session, exit, generatedAt);
}

/** True when a run asked every capability probe, the only kind of run the cache keeps. */
function asksEveryCapabilityProbe(probes: readonly DoctorProbeId[]): boolean {
  return CAPABILITY_PROBE_IDS.every((id) => probes.includes(id));
}

function writeAll(
  stock: SupportedReport,
  devices: DoctorDevice[],
  generatedAt: string,
): { written: string[]; error: string | null } {
  const written: string[] = [];
  try {
    for (const d of devices) {
      const device = stock.devices.find((x) => x.index === d.index)!;
      written.push(writeCache(cacheKeyFor(stock, device), d, generatedAt));
    }
    return { written, error: null };
  } catch (err) {
    return { written, error: `the doctor cache could not be written: ${(err as Error).message}` };
  }
}
