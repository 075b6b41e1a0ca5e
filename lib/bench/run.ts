/**
 * `bench`: a llama.cpp tool run stock and under each profile, through exec's injection, and what it measured compared.
 * Speed (llama-bench) runs in interleaved rounds whose order rotates, so drift and heat fall on every side alike;
 * fidelity (llama-perplexity) saves the stock logits once in a private folder and compares each profile with them.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { BenchError, FileError, NativeError, UnsupportedPlatformError } from '../core/errors.js';
import { clip } from '../core/input.js';
import { plural } from '../core/words.js';
import { JSON_LIMITS } from '../core/jsonfile.js';
import { loadNative, packageRoot, packageVersion } from '../device/native.js';
import { probe } from '../device/probe.js';
import type { DeviceReport, HostInfo, UnsupportedReason } from '../device/types.js';
import { prepareExec, type PreparedExec } from '../exec/prepare.js';
import { runWithInjector, STATUS_DRAIN_MS, type ExecOutcome } from '../exec/run.js';
import { planPatch, refusedError, type ApplyWarning } from '../patch/plan.js';
import type { Profile } from '../patch/profiles.js';
import { llamaCppReleaseName } from '../engines/llama-cpp-releases.js';
import { benchRecords, llamaBenchValues, withReadableOutput, type BenchRecord } from './llama-bench.js';
import {
  firstDivergence,
  GREEDY_PROMPT,
  resolveNodeLlamaCpp,
  runChild,
  tokensPerSecond,
  type ChildResult,
  type GreedyComparison,
} from './node-llama-cpp.js';
import {
  fidelityVerdict,
  LOGITS_HEADER_BYTES,
  parseKlDivergence,
  perplexityArgs,
  tooShortMessage,
  type Fidelity,
} from './perplexity.js';
import { speedRows, type RunRecords, type SpeedRow } from './rows.js';
import { CONFIDENCE, INTERVAL_METHOD, relativeHalfWidth, rotation } from './stats.js';

export const BENCH_SCHEMA = 'metal-cap-shim/bench@2' as const;

/** The most of a tool's output `bench` reads (llama-bench's JSON is kilobytes; a perplexity run's log, megabytes). */
const OUTPUT_LIMIT = 64 * 1024 * 1024;

/**
 * The most of llama-bench's records a result keeps, in bytes of JSON: half of what `report` and `matrix` read back
 * (JSON_LIMITS), so a report that carries the result and its own sections still reads. Adaptive rounds stop before it.
 */
export const RECORDS_BUDGET = JSON_LIMITS.maxBytes / 2;

/** A side of the comparison: stock (no profile), or one profile. */
export interface BenchSide {
  /** `stock`, or the profile's name (`custom` when it has none). */
  name: string;
  profile: Profile | null;
}

/** One run of the tool. */
export interface BenchRun {
  round: number;
  side: string;
  exitCode: number | null;
  signal: string | null;
  /** The shim loaded into the tool (always false for stock); node-llama-cpp: the profile was applied before getLlama(). */
  injectorLoaded: boolean;
  /** The device classes the shim patched in that run (empty when the tool created no Metal device, and for stock). */
  patchedClasses: string[];
  /** What the injector reported as failing in that run. */
  injectorErrors: string[];
  seconds: number;
}

/**
 * Where a result's numbers come from: `measured` on macOS's own Metal, `simulated` over the Linux test build's
 * simulated Metal (the tool ran, but no GPU did: a speed-up there says nothing about a Mac).
 */
export type BenchProvenance = 'measured' | 'simulated';

/** The signals that stop bench cleanly, with what was measured kept. */
export type BenchSignal = 'SIGINT' | 'SIGTERM' | 'SIGHUP';

/**
 * Why the rounds stopped. Complete: `rounds` (the rounds asked), `precision` (every interval narrower than asked),
 * `max-rounds` or `max-time` (a cap reached first: the precision was not). Partial: `interrupted` (a signal),
 * `failed` (a run of the tool failed), `not-patched` (a patched side was not patched), `size-limit` (another round
 * would make the result larger than report and matrix read back).
 */
export type StopReason =
  | 'rounds'
  | 'precision'
  | 'max-rounds'
  | 'max-time'
  | 'interrupted'
  | 'failed'
  | 'not-patched'
  | 'size-limit';

/** How the measuring ended: the reason, one line saying it, and the signal when one stopped it. */
export interface BenchStop {
  reason: StopReason;
  detail: string;
  signal: BenchSignal | null;
}

/** The run that failed: which side and round, how it ended, and why it is not a result. */
export interface BenchFailure {
  side: string;
  round: number;
  exitCode: number | null;
  signal: string | null;
  code: 'ERR_BENCH_TOOL' | 'ERR_BENCH_OUTPUT' | 'ERR_BENCH_NOT_PATCHED';
  message: string;
}

/**
 * Whether the result is what it says. `valid` is false when a patched side was not patched in one of its runs: the
 * result then compares stock with stock and is refused by `report` and `matrix`. `affected` says whether the tool
 * measured on a backend a profile can change (Metal): false for a CPU-only build (valid, but no profile can speed it
 * up), null when the tool did not say which backend it used.
 */
export interface BenchValidity {
  valid: boolean;
  reason: string | null;
  affected: boolean | null;
  /** Every backend the tool named, once each. */
  backends: string[];
}

export type { SpeedRow };

/** One profile's fidelity against stock. */
export interface FidelityRow extends Fidelity {
  name: string;
  verdict: 'within-tolerance' | 'differs';
  reasons: string[];
}

export interface BenchResult {
  schema: typeof BENCH_SCHEMA;
  packageVersion: string;
  generatedAt: string;
  /** `node-llama-cpp`: bench --node-llama-cpp (speed rows from node-llama-cpp, and `greedy`). */
  mode: 'speed' | 'fidelity' | 'node-llama-cpp';
  /** The tool and its arguments as run (bench's additions included; the logits path as `<logits>`). */
  command: string[];
  /** The rounds completed (every side ran): the rows are made of these. */
  rounds: number;
  host: HostInfo | null;
  provenance: BenchProvenance;
  /** How the speed-ups' intervals are computed. */
  interval: { method: typeof INTERVAL_METHOD; confidence: number };
  /** Each device's stock answers, and each profile as applied (bound to this host) with the answers it gives. */
  stock: DeviceReport[];
  profiles: { name: string; profile: Profile; warnings: ApplyWarning[]; expected: DeviceReport[] }[];
  runs: BenchRun[];
  /** llama-bench's records of every run, as it printed them (speed); node-llama-cpp: each child's measurement. */
  records: { round: number; side: string; records: unknown[] }[];
  speed: SpeedRow[] | null;
  fidelity: FidelityRow[] | null;
  /** fidelity --control: a second stock run against stock's logits, the noise floor (null when interrupted first). */
  control?: FidelityRow | null;
  /** node-llama-cpp: the greedy generations compared (absent from results of the other modes). */
  greedy?: GreedyComparison | null;
  stop: BenchStop;
  /** True when the measuring stopped before it was done (`stop` says why): what is here was measured. */
  partial: boolean;
  /** The run that failed, when one did. */
  failure: BenchFailure | null;
  validity: BenchValidity;
}

/** Rounds: at least `rounds`; with `precision`, more until every interval is that narrow or a cap is reached. */
export interface RoundOptions {
  rounds: number;
  /** The widest relative half-width of a speed-up's interval accepted (0.02 for ±2 %); null: exactly `rounds`. */
  precision?: number | null;
  /** The most rounds `precision` may run (default MAX_ADAPTIVE_ROUNDS). */
  maxRounds?: number;
  /** No round is started after this many seconds of measuring (`precision` only); null: no time cap. */
  maxSeconds?: number | null;
}

export interface BenchOptions extends RoundOptions {
  command: string;
  args: string[];
  sides: BenchSide[];
  mode: 'speed' | 'fidelity';
  /** fidelity: also compare a second stock run with stock's logits (the control row). */
  control?: boolean;
  force: boolean;
  /** Apply a threadgroup claim the newest llama.cpp rules would turn into a request above every Apple GPU's (refused
   * otherwise, as exec refuses it); default false. */
  allowAboveHardware?: boolean;
  /** Told once every side is checked, before the first run: the profiles as applied, with their warnings. */
  onPlanned?: (profiles: BenchResult['profiles']) => void;
  /** Told as each run starts (`rounds`: the rounds planned so far). */
  onRun?: (run: { round: number; rounds: number; side: string; index: number; total: number }) => void;
  /** Asked between runs: a signal stops the measuring, with what was measured so far. */
  stopped?: () => BenchSignal | null;
  /** @internal The most of each stream a run may print (OUTPUT_LIMIT): lowered by tests only. */
  outputLimit?: number;
}

/** The most rounds `--precision` runs unless told otherwise. */
export const MAX_ADAPTIVE_ROUNDS = 30;

/**
 * bench's private folder for the logits (mode 0700, a new name): a temporary folder that cannot be
 * made (TMPDIR missing, full or not ours) is a typed error saying what to do, not the system's message.
 */
function privateFolder(): string {
  try {
    return mkdtempSync(path.join(tmpdir(), 'metal-cap-shim-bench-'));
  } catch (e) {
    throw new FileError(
      `bench cannot make its private folder in ${clip(tmpdir())} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): set TMPDIR to a folder of yours with free space`,
    );
  }
}

/** The text `bench --fidelity` compares on when no `-f` is given: the package's README, shipped with it. */
export function defaultFidelityText(): string {
  return path.join(packageRoot(), 'README.md');
}

interface Prepared {
  side: BenchSide;
  prepared: PreparedExec;
}

/** Every side checked before anything runs: a refusal or an unpatchable tool stops bench at once (exec's rules). */
function prepareSides(o: BenchOptions): Prepared[] {
  return o.sides.map((side) => ({
    side,
    prepared: prepareExec({
      profile: side.profile,
      command: o.command,
      args: o.args,
      force: o.force,
      allowAboveHardware: o.allowAboveHardware ?? false,
    }),
  }));
}

/** One run with the tool's stdout and stderr read through pipes, each bounded by OUTPUT_LIMIT while it is read. */
async function runOnce(
  o: BenchOptions,
  p: Prepared,
  args: string[],
): Promise<{ outcome: ExecOutcome; stdout: string; stderr: string; overflow: string | null; seconds: number }> {
  const output = boundedOutput(o.outputLimit ?? OUTPUT_LIMIT);
  const started = process.hrtime.bigint();
  const { prepared } = p;
  const options = {
    command: o.command,
    args,
    program: prepared.resolved,
    stdout: 'pipe' as const,
    stderr: 'pipe' as const,
    onSpawn: output.attach,
  };
  const outcome =
    prepared.injector === null
      ? await runWithInjector({ ...options, profile: null }, null, [])
      : await runWithInjector({ ...options, profile: prepared.profile }, prepared.injector, prepared.warnings);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { outcome, ...(await output.collected()), seconds };
}

/**
 * A tool's stdout and stderr kept in memory up to `limit` bytes each, counted as they arrive: past it the tool is
 * killed and both pipes closed, so a tool that prints without end fills neither the disk nor the heap (writing to
 * files and checking afterwards let gigabytes fill TMPDIR first). `overflow` says which stream passed the limit.
 */
function boundedOutput(limit: number): {
  attach: (child: ChildProcess) => void;
  collected: () => Promise<{ stdout: string; stderr: string; overflow: string | null }>;
} {
  const kept = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
  const streams: Readable[] = [];
  const closed: Promise<void>[] = [];
  let overflow: string | null = null;
  const attach = (child: ChildProcess) => {
    for (const name of ['stdout', 'stderr'] as const) {
      const stream = child[name];
      if (stream === null) continue;
      streams.push(stream);
      closed.push(
        new Promise((done) => {
          stream.once('close', done);
          stream.once('error', () => done());
        }),
      );
      let bytes = 0;
      stream.on('data', (chunk: Buffer) => {
        if (overflow !== null) return;
        bytes += chunk.length;
        if (bytes <= limit) {
          kept[name].push(chunk);
          return;
        }
        overflow = `the tool printed more than ${limit} bytes on its ${name} and was stopped there`;
        child.kill('SIGKILL');
        // A process the tool started may hold the pipes too: closing our ends stops its writes as well.
        for (const s of streams) s.destroy();
      });
    }
  };
  const collected = async () => {
    // The pipes may outlive the tool (a process it left running): wait for their end at most STATUS_DRAIN_MS.
    let bound: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(closed),
      new Promise<void>((done) => {
        bound = setTimeout(done, STATUS_DRAIN_MS);
      }),
    ]);
    clearTimeout(bound);
    for (const s of streams) s.destroy();
    const text = (chunks: Buffer[]) => Buffer.concat(chunks).toString('utf8');
    return { stdout: text(kept.stdout), stderr: text(kept.stderr), overflow };
  };
  return { attach, collected };
}

/** A run that did not end with exit 0 is the tool failing, never a result: the error names it and how it ended. */
function endedProblem(
  side: string,
  command: string,
  outcome: { exitCode: number | null; signal: string | null },
  stderr: string,
): string | null {
  if (outcome.exitCode === 0 && outcome.signal === null) return null;
  const how = outcome.signal !== null ? `was killed by ${outcome.signal}` : `exited with code ${outcome.exitCode}`;
  const last = stderr.trim().split('\n').slice(-3).join(' | ');
  return `${command} (${side}) ${how}${last ? `; its last words: ${last}` : ''}`;
}

/** A run stopped at OUTPUT_LIMIT as a thrown ERR_BENCH_OUTPUT (fidelity, whose stock run every profile needs). */
function checkOutput(side: string, command: string, overflow: string | null): void {
  if (overflow !== null) throw new BenchError('ERR_BENCH_OUTPUT', `${command} (${side}): ${overflow}`);
}

/** endedProblem as a thrown ERR_BENCH_TOOL (fidelity, whose stock run every profile needs). */
function checkEnded(
  side: string,
  command: string,
  outcome: { exitCode: number | null; signal: string | null },
  stderr: string,
): void {
  const problem = endedProblem(side, command, outcome, stderr);
  if (problem !== null) throw new BenchError('ERR_BENCH_TOOL', problem);
}

/** The error for a machine with no Metal to measure on, with the code every command uses for it (exit 4). */
function noMetalError(reason: UnsupportedReason, why: string): Error {
  const detail = `no Metal here (${why}): no profile can change what bench measures`;
  if (reason === 'unsupported-platform') return new UnsupportedPlatformError(detail);
  return new NativeError(reason === 'no-device' ? 'ERR_NO_DEVICE' : 'ERR_NATIVE_UNAVAILABLE', detail);
}

/** The name of the control row of `bench --fidelity --control`: stock compared with its own logits. */
export const CONTROL_ROW = 'stock (control)';

/**
 * The stock run of --fidelity saved logits to compare with. llama-perplexity exits 0 and leaves a 12-byte file (its
 * magic and the context size) when the text has too few tokens: bench then ends with the tool's own words.
 */
function checkLogitsSaved(command: string, logits: string, output: string): void {
  const saved = statSync(logits, { throwIfNoEntry: false });
  if (saved !== undefined && saved.size > LOGITS_HEADER_BYTES) return;
  const said = tooShortMessage(output);
  throw new BenchError(
    'ERR_BENCH_TOOL',
    said !== null
      ? `${command} (stock) saved no logits; it said: ${said} (give a longer -f text, or a smaller -c)`
      : `${command} (stock) saved no logits: the text may be shorter than two contexts of tokens (give a longer -f, or a smaller -c)`,
  );
}

/**
 * The devices and host as the plan sees them: stock answers, and what each profile makes of them. A side's own
 * warnings (exec's, for a tool, which prepareExec has already refused or not) are kept; a side without them gets the
 * plan's, and a refused plan is refused here, by exec's rule. `requireMetal`: no Metal is an error (exit 4) rather
 * than a plan over no device.
 */
function devicesAndPlans(
  sides: { side: BenchSide; warnings?: ApplyWarning[] }[],
  force: boolean,
  allowAboveHardware: boolean,
  requireMetal: boolean,
) {
  const native = loadNative();
  const report = native.binding === null ? null : probe({ allDevices: true });
  if (requireMetal && native.binding === null) throw noMetalError(native.reason, native.detail);
  if (requireMetal && report !== null && !report.supported) throw noMetalError(report.reason, report.detail);
  const stock = report?.supported ? report.devices : [];
  const host = report?.host ?? null;
  const provenance: BenchProvenance = report?.source === 'simulated' ? 'simulated' : 'measured';
  const profiles = sides
    .filter((p) => p.side.profile !== null)
    .map((p) => {
      const plan = planPatch({ devices: stock, host }, p.side.profile!, {
        force,
        allowAboveHardware,
        env: process.env,
      });
      if (!plan.accepted && p.warnings === undefined) throw refusedError(plan.reason, plan.detail);
      return {
        name: p.side.name,
        profile: plan.profile,
        warnings: p.warnings ?? plan.warnings,
        expected: plan.expected,
      };
    });
  return { stock, host, provenance, profiles };
}

/** A backend a profile can change: Metal (llama-bench's `backends` names it; node-llama-cpp's `gpu` is `metal`). */
export function isMetalBackend(backend: string): boolean {
  return /\bmetal\b/i.test(backend);
}

/**
 * Whether the result is what it says (see BenchValidity), from its runs and the backends the tool named. A patched
 * run is patched when the shim loaded, reported no error, and, where the tool used Metal, patched a device class.
 */
export function validityOf(
  runs: readonly BenchRun[],
  backendsSeen: readonly (string | null)[],
  mode: BenchResult['mode'],
): BenchValidity {
  const backends = [...new Set(backendsSeen.filter((b): b is string => b !== null))];
  const unknown = backendsSeen.some((b) => b === null);
  const affected = backends.some(isMetalBackend) ? true : unknown || mode === 'fidelity' ? null : false;
  const problem = runs.map((r) => notPatchedReason(r, affected)).find((x) => x !== null) ?? null;
  return { valid: problem === null, reason: problem, affected, backends };
}

/** Why a patched run was not patched, or null (stock runs, and patched ones that were). */
function notPatchedReason(r: BenchRun, affected: boolean | null): string | null {
  if (r.side === 'stock') return null;
  const at = `${r.side}, round ${r.round}`;
  if (!r.injectorLoaded) return `${at}: the profile was not in force (the shim did not load, or was not applied)`;
  if (r.injectorErrors.length > 0) return `${at}: the shim reported errors: ${r.injectorErrors.join('; ')}`;
  if (affected === true && r.patchedClasses.length === 0)
    return `${at}: the tool used Metal but the shim patched no device class`;
  return null;
}

/** A stop by a signal, said as a person would. */
function stoppedBy(signal: BenchSignal): BenchStop {
  return { reason: 'interrupted', detail: `stopped by ${signal}: the runs that finished are kept`, signal };
}

/** The fields every result derives from how it stopped. */
function ended(stop: BenchStop): { stop: BenchStop; partial: boolean } {
  const complete: StopReason[] = ['rounds', 'precision', 'max-rounds', 'max-time'];
  return { stop, partial: !complete.includes(stop.reason) };
}

/** Thrown by a run to stop the rounds: the stop, and the failed run when there is one. */
class RoundsStopped extends Error {
  constructor(
    readonly stop: BenchStop,
    readonly failure: BenchFailure | null,
  ) {
    super(stop.detail);
  }
}

/** A failed run as the stop it causes. */
function failed(failure: BenchFailure): RoundsStopped {
  const reason: StopReason = failure.code === 'ERR_BENCH_NOT_PATCHED' ? 'not-patched' : 'failed';
  return new RoundsStopped(
    {
      reason,
      detail: `${failure.message} (round ${failure.round}); ${failure.round > 1 ? `rounds 1 to ${failure.round - 1} are kept` : 'no round finished'}`,
      signal: null,
    },
    failure,
  );
}

/**
 * Runs interleaved rounds, the order of the sides turning each round (rotation), until the plan is done: `rounds`
 * rounds, then with `precision` more until `precise()` says every interval is narrow enough or a cap is reached.
 * `runSide` measures one side in one round, or throws RoundsStopped; `size()` is the bytes kept so far, and a round
 * that would pass RECORDS_BUDGET (by the largest round so far) is not started. Returns how it stopped and the rounds
 * completed.
 */
async function interleave(
  plan: RoundOptions,
  sides: readonly BenchSide[],
  hooks: Pick<BenchOptions, 'onRun' | 'stopped'>,
  runSide: (side: BenchSide, round: number, index: number) => Promise<void>,
  precise: () => boolean,
  size: () => number,
): Promise<{ stop: BenchStop; completed: number; failure: BenchFailure | null }> {
  const precision = plan.precision ?? null;
  const maxRounds = precision === null ? plan.rounds : Math.max(plan.rounds, plan.maxRounds ?? MAX_ADAPTIVE_ROUNDS);
  const started = process.hrtime.bigint();
  const elapsed = () => Number(process.hrtime.bigint() - started) / 1e9;
  let completed = 0;
  let index = 0;
  let largestRound = 0;
  for (;;) {
    if (completed >= plan.rounds) {
      if (precision === null)
        return {
          stop: { reason: 'rounds', detail: `${plural(completed, 'round', 'rounds')}, as asked`, signal: null },
          completed,
          failure: null,
        };
      if (precise())
        return {
          stop: {
            reason: 'precision',
            detail: `every interval within ±${percent(precision)} after ${plural(completed, 'round', 'rounds')}`,
            signal: null,
          },
          completed,
          failure: null,
        };
      if (completed >= maxRounds)
        return {
          stop: {
            reason: 'max-rounds',
            detail: `${plural(completed, 'round', 'rounds')}, the most allowed, before every interval was within ±${percent(precision)}`,
            signal: null,
          },
          completed,
          failure: null,
        };
      if (plan.maxSeconds != null && elapsed() >= plan.maxSeconds)
        return {
          stop: {
            reason: 'max-time',
            detail: `${Math.round(elapsed())} s, the time allowed, before every interval was within ±${percent(precision)}`,
            signal: null,
          },
          completed,
          failure: null,
        };
    }
    const before = size();
    if (completed > 0 && before + largestRound > RECORDS_BUDGET)
      return {
        stop: {
          reason: 'size-limit',
          detail: `another round would make the result larger than report and matrix read back (${RECORDS_BUDGET} bytes of records); ${plural(completed, 'round', 'rounds')} kept`,
          signal: null,
        },
        completed,
        failure: null,
      };
    const total = (precision === null ? plan.rounds : Math.max(plan.rounds, completed + 1)) * sides.length;
    for (const i of rotation(sides.length, completed)) {
      const signal = hooks.stopped?.() ?? null;
      if (signal !== null) return { stop: stoppedBy(signal), completed, failure: null };
      const side = sides[i]!;
      index++;
      hooks.onRun?.({ round: completed + 1, rounds: total / sides.length, side: side.name, index, total });
      try {
        await runSide(side, completed + 1, i);
      } catch (e) {
        if (e instanceof RoundsStopped) return { stop: e.stop, completed, failure: e.failure };
        throw e;
      }
    }
    const signal = hooks.stopped?.() ?? null;
    completed++;
    largestRound = Math.max(largestRound, size() - before);
    if (signal !== null) return { stop: stoppedBy(signal), completed, failure: null };
  }
}

const percent = (fraction: number) => `${Number((fraction * 100).toPrecision(3))} %`;

/** True when every profile's speed-up in every row has an interval within ±precision. */
function allPrecise(rows: readonly SpeedRow[], precision: number | null | undefined): boolean {
  if (precision == null) return true;
  return rows.every((r) => r.profiles.every((p) => relativeHalfWidth(p.speedup) <= precision));
}

/** llama-bench's record reduced to flat values (a number, a string, a list of them): what a record is. */
function flatRecord(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const flat: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (v === null || typeof v !== 'object') flat[k] = v;
    else if (Array.isArray(v) && v.every((x) => x === null || typeof x !== 'object')) flat[k] = v;
  }
  return flat;
}

/** Runs the comparison. Throws before any run for what exec would refuse; a failed run ends it with a partial result. */
export async function runBench(o: BenchOptions): Promise<BenchResult> {
  const sides = prepareSides(o);
  const { stock, host, provenance, profiles } = devicesAndPlans(
    sides.map((p) => ({ side: p.side, warnings: p.prepared.warnings })),
    o.force,
    o.allowAboveHardware ?? false,
    false,
  );
  o.onPlanned?.(profiles);
  const folder = privateFolder();
  const runs: BenchRun[] = [];
  const base = {
    schema: BENCH_SCHEMA,
    packageVersion: packageVersion(),
    generatedAt: new Date().toISOString(),
    mode: o.mode,
    host,
    provenance,
    interval: { method: INTERVAL_METHOD, confidence: CONFIDENCE },
    stock,
    profiles,
    runs,
  };
  try {
    if (o.mode === 'speed') {
      const { args, format } = withReadableOutput(o.args);
      const byRun: RunRecords[] = [];
      const raw: BenchResult['records'] = [];
      let bytes = 0;
      const names = sides.map((s) => s.side.name);
      const rowsSoFar = (upTo: number) =>
        speedRows(
          names,
          byRun.filter((r) => r.round <= upTo),
        );
      const backendsSeen: (string | null)[] = [];
      let completed = 0;
      const outcome = await interleave(
        o,
        sides.map((s) => s.side),
        o,
        async (_side, round, i) => {
          const p = sides[i]!;
          const r = await runOnce(o, p, args);
          const run = runRecord(round, p.side.name, r);
          runs.push(run);
          // A signal that arrived during the run ended it: the run is not a result, and not a failure either.
          const signal = o.stopped?.() ?? null;
          if (signal !== null) throw new RoundsStopped(stoppedBy(signal), null);
          const fail = (code: BenchFailure['code'], message: string) =>
            failed({ side: p.side.name, round, exitCode: run.exitCode, signal: run.signal, code, message });
          if (r.overflow !== null) throw fail('ERR_BENCH_OUTPUT', `${o.command} (${p.side.name}): ${r.overflow}`);
          const problem = endedProblem(p.side.name, o.command, r.outcome, r.stderr);
          if (problem !== null) throw fail('ERR_BENCH_TOOL', problem);
          let values: unknown[];
          let records: BenchRecord[];
          try {
            values = llamaBenchValues(r.stdout, format).map(flatRecord);
            records = benchRecords(values);
          } catch (e) {
            if (!(e instanceof BenchError)) throw e;
            throw fail('ERR_BENCH_OUTPUT', `${o.command} (${p.side.name}): ${e.message}`);
          }
          for (const rec of records) backendsSeen.push(rec.backend);
          const notPatched = notPatchedReason(
            run,
            validityOf(
              [],
              records.map((x) => x.backend),
              'speed',
            ).affected,
          );
          if (notPatched !== null) throw fail('ERR_BENCH_NOT_PATCHED', notPatched);
          byRun.push({ round, side: p.side.name, records });
          raw.push({ round, side: p.side.name, records: values });
          bytes += JSON.stringify(values).length;
        },
        () => allPrecise(rowsSoFar(Number.POSITIVE_INFINITY), o.precision),
        () => bytes,
      );
      completed = outcome.completed;
      return {
        ...base,
        command: [o.command, ...args],
        rounds: completed,
        records: raw,
        speed: rowsSoFar(completed),
        fidelity: null,
        ...ended(outcome.stop),
        failure: outcome.failure,
        validity: validityOf(runs, backendsSeen, 'speed'),
      };
    }
    const { args } = perplexityArgs(o.args, defaultFidelityText());
    const logits = path.join(folder, 'stock.kld');
    const [stockSide, ...patched] = sides;
    const compare = [...args, '--kl-divergence-base', logits, '--kl-divergence'];
    // The control is stock again, compared with stock's own logits: the noise floor of the tool on this machine. Its
    // run is a stock run (side `stock`, never injected); only its row is named CONTROL_ROW.
    const comparisons = [
      ...(o.control ? [{ name: CONTROL_ROW, p: stockSide! }] : []),
      ...patched.map((p) => ({ name: p.side.name, p })),
    ];
    const total = 1 + comparisons.length;
    o.onRun?.({ round: 1, rounds: 1, side: 'stock', index: 1, total });
    const first = await runOnce(o, stockSide!, [...args, '--kl-divergence-base', logits]);
    runs.push(runRecord(1, 'stock', first));
    const rows: FidelityRow[] = [];
    let control: FidelityRow | null = null;
    let signal = o.stopped?.() ?? null;
    let interrupted = signal !== null;
    if (!interrupted) {
      checkOutput('stock', o.command, first.overflow);
      checkEnded('stock', o.command, first.outcome, first.stderr);
      checkLogitsSaved(o.command, logits, `${first.stdout}\n${first.stderr}`);
    }
    for (const c of comparisons) {
      signal ??= o.stopped?.() ?? null;
      if (interrupted || signal !== null) {
        interrupted = true;
        break;
      }
      o.onRun?.({ round: 1, rounds: 1, side: c.name, index: runs.length + 1, total });
      const r = await runOnce(o, c.p, compare);
      runs.push(runRecord(1, c.p.side.name, r));
      signal ??= o.stopped?.() ?? null;
      if (signal !== null) {
        interrupted = true;
        break;
      }
      checkOutput(c.name, o.command, r.overflow);
      checkEnded(c.name, o.command, r.outcome, r.stderr);
      const f = parseKlDivergence(`${r.stdout}\n${r.stderr}`);
      const row = { name: c.name, ...f, ...fidelityVerdict(f) };
      if (c.name === CONTROL_ROW) control = row;
      else rows.push(row);
    }
    return {
      ...base,
      command: [o.command, ...args, '--kl-divergence-base', '<logits>'],
      rounds: 1,
      records: [],
      speed: null,
      fidelity: rows,
      ...(o.control ? { control } : {}),
      ...ended(
        interrupted
          ? stoppedBy(signal ?? 'SIGINT')
          : { reason: 'rounds', detail: 'every profile compared', signal: null },
      ),
      failure: null,
      validity: validityOf(runs, [], 'fidelity'),
    };
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

function runRecord(round: number, side: string, r: { outcome: ExecOutcome; seconds: number }): BenchRun {
  return {
    round,
    side,
    exitCode: r.outcome.exitCode,
    signal: r.outcome.signal,
    injectorLoaded: r.outcome.injectorLoaded,
    patchedClasses: r.outcome.patchedClasses,
    injectorErrors: r.outcome.injectorErrors,
    seconds: Number(r.seconds.toFixed(3)),
  };
}

export interface NodeLlamaCppBenchOptions extends RoundOptions {
  /** The GGUF model, as given. */
  model: string;
  /** The user's project: node-llama-cpp is resolved from here, and each child runs here. */
  cwd: string;
  sides: BenchSide[];
  force: boolean;
  /** As BenchOptions' allowAboveHardware. */
  allowAboveHardware?: boolean;
  promptTokens: number;
  genTokens: number;
  threads: number | null;
  /** Timed evaluations per run, after its warm-up. */
  repetitions: number;
  onPlanned?: BenchOptions['onPlanned'];
  onRun?: BenchOptions['onRun'];
  stopped?: BenchOptions['stopped'];
  /** Aborted on SIGINT: the running child is sent SIGINT too. */
  stop?: AbortSignal;
}

/**
 * A child's measurement as the records speedRows reads: `node-llama-cpp pp512` and `node-llama-cpp tg128`, each the
 * mean tokens/s of the run's timed repetitions with their standard deviation, as llama-bench's `avg_ts` / `stddev_ts`.
 */
function nodeLlamaCppRecords(model: string, r: ChildResult): BenchRecord[] {
  const file = path.basename(model);
  const key = (nPrompt: number, nGen: number) => ({ model_filename: file, n_prompt: nPrompt, n_gen: nGen, n_depth: 0 });
  const common = {
    nDepth: 0,
    model: file,
    modelType: null,
    build: `${llamaCppReleaseName({ tag: r.llamaCpp }) ?? 'unknown'} (node-llama-cpp ${r.nodeLlamaCpp})`,
    backend: r.gpu === false ? 'CPU' : r.gpu,
  };
  return [
    {
      ...common,
      test: `node-llama-cpp pp${r.pp.tokens}`,
      nPrompt: r.pp.tokens,
      nGen: 0,
      key: key(r.pp.tokens, 0),
      ...tokensPerSecond(r.pp),
    },
    {
      ...common,
      test: `node-llama-cpp tg${r.tg.tokens}`,
      nPrompt: 0,
      nGen: r.tg.tokens,
      key: key(0, r.tg.tokens),
      ...tokensPerSecond(r.tg),
    },
  ];
}

/**
 * bench --node-llama-cpp: a child per side and round (rounds interleaved as for llama-bench), each timing prompt
 * processing and generation and generating greedily; throws ERR_BENCH_NO_NODE_LLAMA_CPP before anything runs when the
 * project has no node-llama-cpp, and a no-Metal error (exit 4) where there is no Metal for a profile to change. A
 * child that does not end with exit 0 ends the rounds with a partial result (never a result of its own).
 */
export async function runNodeLlamaCppBench(o: NodeLlamaCppBenchOptions): Promise<BenchResult> {
  const found = resolveNodeLlamaCpp(o.cwd);
  const { stock, host, provenance, profiles } = devicesAndPlans(
    o.sides.map((side) => ({ side })),
    o.force,
    o.allowAboveHardware ?? false,
    true,
  );
  o.onPlanned?.(profiles);
  const applied = new Map(profiles.map((p) => [p.name, p.profile]));
  const runs: BenchRun[] = [];
  const byRun: RunRecords[] = [];
  const raw: BenchResult['records'] = [];
  const firstOf = new Map<string, ChildResult>();
  const text = readFileSync(defaultFidelityText(), 'utf8');
  const names = o.sides.map((s) => s.name);
  const rowsSoFar = (upTo: number) =>
    speedRows(
      names,
      byRun.filter((r) => r.round <= upTo),
    );
  const backendsSeen: string[] = [];
  let bytes = 0;
  const outcome = await interleave(
    o,
    o.sides,
    o,
    async (side, round) => {
      const r = await runChild(
        {
          cwd: o.cwd,
          model: path.resolve(o.cwd, o.model),
          profile: side.profile === null ? null : applied.get(side.name)!,
          force: o.force,
          allowAboveHardware: o.allowAboveHardware ?? false,
          promptTokens: o.promptTokens,
          genTokens: o.genTokens,
          threads: o.threads,
          repetitions: o.repetitions,
          text,
        },
        o.stop,
      );
      const run: BenchRun = {
        round,
        side: side.name,
        exitCode: r.exitCode,
        signal: r.signal,
        injectorLoaded: r.result?.applied ?? false,
        // Applied in the child's own process: the classes are the profile's business there, not reported.
        patchedClasses: [],
        injectorErrors: r.result?.notApplied ? [r.result.notApplied] : [],
        seconds: Number(r.seconds.toFixed(3)),
      };
      runs.push(run);
      const signal = o.stopped?.() ?? null;
      if (signal !== null) throw new RoundsStopped(stoppedBy(signal), null);
      const fail = (code: BenchFailure['code'], message: string) =>
        failed({ side: side.name, round, exitCode: r.exitCode, signal: r.signal, code, message });
      const problem = endedProblem(side.name, `node-llama-cpp ${found.version}`, r, r.stderr);
      if (problem !== null) throw fail('ERR_BENCH_TOOL', problem);
      if (r.result === null)
        throw fail(
          'ERR_BENCH_OUTPUT',
          `the node-llama-cpp run (${side.name}) exited 0 but printed no result: ${r.problem ?? 'no output'}`,
        );
      const backend = r.result.gpu === false ? 'CPU' : r.result.gpu;
      backendsSeen.push(backend);
      // node-llama-cpp applies the profile itself: whether it took is what the child said, not a device class.
      const notPatched = notPatchedReason(
        { ...run, patchedClasses: ['(applied in process)'] },
        isMetalBackend(backend),
      );
      if (notPatched !== null) throw fail('ERR_BENCH_NOT_PATCHED', notPatched);
      byRun.push({ round, side: side.name, records: nodeLlamaCppRecords(o.model, r.result) });
      raw.push({ round, side: side.name, records: [r.result] });
      bytes += JSON.stringify(r.result).length;
      if (!firstOf.has(side.name)) firstOf.set(side.name, r.result);
    },
    () => allPrecise(rowsSoFar(Number.POSITIVE_INFINITY), o.precision),
    () => bytes,
  );
  const stockFirst = firstOf.get('stock');
  const greedy: GreedyComparison | null =
    stockFirst === undefined
      ? null
      : {
          prompt: GREEDY_PROMPT,
          stock: stockFirst.greedy,
          profiles: o.sides
            .filter((s) => s.profile !== null && firstOf.has(s.name))
            .map((s) => {
              const mine = firstOf.get(s.name)!.greedy;
              return { name: s.name, tokens: mine.length, divergence: firstDivergence(stockFirst.greedy, mine) };
            }),
        };
  // A run that was applied in process reports no classes: validity reads `injectorLoaded` (applied) alone there.
  const validity = validityOf(
    runs.map((r) => ({ ...r, patchedClasses: r.injectorLoaded ? ['(applied in process)'] : [] })),
    backendsSeen,
    'node-llama-cpp',
  );
  return {
    schema: BENCH_SCHEMA,
    packageVersion: packageVersion(),
    generatedAt: new Date().toISOString(),
    mode: 'node-llama-cpp',
    command: [
      `node-llama-cpp@${found.version}`,
      '--model',
      path.basename(o.model),
      '--prompt-tokens',
      String(o.promptTokens),
      '--gen-tokens',
      String(o.genTokens),
      ...(o.threads === null ? [] : ['--threads', String(o.threads)]),
      '--repetitions',
      String(o.repetitions),
    ],
    rounds: outcome.completed,
    host,
    provenance,
    interval: { method: INTERVAL_METHOD, confidence: CONFIDENCE },
    stock,
    profiles,
    runs,
    records: raw,
    speed: rowsSoFar(outcome.completed),
    fidelity: null,
    greedy,
    ...ended(outcome.stop),
    failure: outcome.failure,
    validity,
  };
}
