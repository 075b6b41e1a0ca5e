/**
 * A bench result read back (`report --bench FILE`, a field report's `bench` section, `matrix`, the API's
 * `fieldReport({ bench })`): read once into plain data, every field a formatter or the matrix reads checked, and the
 * speed-ups computed again from the per-round ratios they claim to come from, since it comes from a file someone sent.
 * A result that is not what it says (a patched side that was not patched) is refused here, whatever else it holds.
 */
import { InvalidReportError } from '../core/errors.js';
import { clip, readInput } from '../core/input.js';
import { schemaProblem } from '../core/jsonfile.js';
import { shapeReader, type ShapeReader } from '../core/shape.js';
import type { GreedyStep } from './node-llama-cpp.js';
import { fidelityVerdict, KLD_ROUNDING } from './perplexity.js';
import type { ProfileSpeed, SideSpeed, SpeedRow } from './rows.js';
import { BENCH_SCHEMA, type BenchResult, type BenchRun, type FidelityRow, type StopReason } from './run.js';
import { pairedSpeedup } from './stats.js';

const STOP_REASONS: readonly StopReason[] = [
  'rounds',
  'precision',
  'max-rounds',
  'max-time',
  'interrupted',
  'failed',
  'not-patched',
  'size-limit',
];
const COMPLETE: readonly StopReason[] = ['rounds', 'precision', 'max-rounds', 'max-time'];

function side(s: ShapeReader, v: unknown, field: string): SideSpeed {
  const o = s.object(v, field);
  const samples = s.list(o.samples, `${field}.samples`, (x, f) => s.number(x, f, { min: 0 }));
  const rounds = s.list(o.rounds, `${field}.rounds`, (x, f) => s.count(x, f));
  if (rounds.length !== samples.length) s.fail(`${field}.rounds`, `must name one round per sample (${samples.length})`);
  return {
    ts: s.numberOrNull(o.ts, `${field}.ts`, { min: 0 }),
    samples,
    rounds,
    stddevTs: s.numberOrNull(o.stddevTs, `${field}.stddevTs`, { min: 0 }),
  };
}

function profileSpeed(s: ShapeReader, v: unknown, field: string): ProfileSpeed {
  const o = s.object(v, field);
  const ratios = s.list(o.ratios, `${field}.ratios`, (x, f) => s.number(x, f, { above: 0 }));
  // Derived, never taken as written: the centre, interval and verdict are those of the ratios.
  return { name: s.text(o.name, `${field}.name`), ...side(s, v, field), ratios, speedup: pairedSpeedup(ratios) };
}

function speedRow(s: ShapeReader, v: unknown, field: string): SpeedRow {
  const o = s.object(v, field);
  return {
    key: s.object(o.key, `${field}.key`),
    label: s.text(o.label, `${field}.label`),
    test: s.text(o.test, `${field}.test`),
    model: s.textOrNull(o.model, `${field}.model`),
    modelType: s.textOrNull(o.modelType, `${field}.modelType`),
    build: s.textOrNull(o.build, `${field}.build`),
    backend: s.textOrNull(o.backend, `${field}.backend`),
    stock: side(s, o.stock, `${field}.stock`),
    profiles: s.list(o.profiles, `${field}.profiles`, (x, f) => profileSpeed(s, x, f)),
  };
}

function step(s: ShapeReader, v: unknown, field: string): GreedyStep {
  const o = s.object(v, field);
  const runnerUp =
    o.runnerUp === null
      ? null
      : (() => {
          const r = s.object(o.runnerUp, `${field}.runnerUp`);
          return {
            token: s.count(r.token, `${field}.runnerUp.token`),
            text: s.text(r.text, `${field}.runnerUp.text`),
            probability: s.number(r.probability, `${field}.runnerUp.probability`, { min: 0, max: 1 }),
          };
        })();
  return {
    token: s.count(o.token, `${field}.token`),
    text: s.text(o.text, `${field}.text`),
    probability: s.number(o.probability, `${field}.probability`, { min: 0, max: 1 }),
    runnerUp,
  };
}

/**
 * One fidelity row: the statistics the table prints, each in its range (a KL divergence may be below 0 by the tool's
 * own rounding, KLD_ROUNDING), their ± (numbers, or null where the tool printed none), and the verdict computed
 * again from them.
 */
function fidelityRow(s: ShapeReader, v: unknown, field: string): FidelityRow {
  const r = s.object(v, field);
  const kld = { min: -KLD_ROUNDING };
  const optional = (x: unknown, f: string, bounds = {}) => s.numberOrNull(x, f, bounds);
  const u = s.object(r.uncertainty, `${field}.uncertainty`);
  const measured = {
    meanKld: s.number(r.meanKld, `${field}.meanKld`, kld),
    medianKld: optional(r.medianKld, `${field}.medianKld`, kld),
    kld99: s.numberOrNull(r.kld99, `${field}.kld99`, kld),
    kld999: optional(r.kld999, `${field}.kld999`, kld),
    maxKld: s.numberOrNull(r.maxKld, `${field}.maxKld`, kld),
    sameTopP: s.number(r.sameTopP, `${field}.sameTopP`, { min: 0, max: 100 }),
    pplRatio: s.number(r.pplRatio, `${field}.pplRatio`, { above: 0 }),
    rmsDp: s.number(r.rmsDp, `${field}.rmsDp`, { min: 0 }),
    uncertainty: {
      meanKld: optional(u.meanKld, `${field}.uncertainty.meanKld`, { min: 0 }),
      sameTopP: optional(u.sameTopP, `${field}.uncertainty.sameTopP`, { min: 0 }),
      pplRatio: optional(u.pplRatio, `${field}.uncertainty.pplRatio`, { min: 0 }),
      rmsDp: optional(u.rmsDp, `${field}.uncertainty.rmsDp`, { min: 0 }),
    },
    chunks: s.count(r.chunks, `${field}.chunks`),
    from: s.oneOf(r.from, `${field}.from`, ['statistics', 'last-row'] as const),
  };
  s.list(r.reasons, `${field}.reasons`, (y, yf) => s.text(y, yf));
  // The verdict is the tolerance's, never taken as written.
  return { ...measured, name: s.text(r.name, `${field}.name`), ...fidelityVerdict(measured) };
}

function run(s: ShapeReader, v: unknown, field: string): BenchRun {
  const o = s.object(v, field);
  return {
    round: s.count(o.round, `${field}.round`),
    side: s.text(o.side, `${field}.side`),
    exitCode: o.exitCode === null ? null : s.number(o.exitCode, `${field}.exitCode`),
    signal: s.textOrNull(o.signal, `${field}.signal`),
    injectorLoaded: s.bool(o.injectorLoaded, `${field}.injectorLoaded`),
    patchedClasses: s.list(o.patchedClasses, `${field}.patchedClasses`, (x, f) => s.text(x, f)),
    injectorErrors: s.list(o.injectorErrors, `${field}.injectorErrors`, (x, f) => s.text(x, f)),
    seconds: s.number(o.seconds, `${field}.seconds`, { min: 0 }),
  };
}

/** Checks parsed JSON as a bench result; `where` names it in messages. Throws InvalidReportError naming the field. */
export function checkBenchResult(value: unknown, where: string): BenchResult {
  const fail = (field: string, what: string): never => {
    throw new InvalidReportError(
      field || '(root)',
      `${clip(where)} is not a usable bench result (${field || 'it'} ${what}); make one with \`metal-cap-shim bench --json\``,
    );
  };
  const s = shapeReader(fail);
  const o = s.object(readInput(value, fail, { json: true }), '');
  const wrongKind = schemaProblem(o, { [BENCH_SCHEMA]: 'metal-cap-shim bench --json' });
  if (wrongKind !== null) fail('schema', wrongKind);
  const mode = s.oneOf(o.mode, 'mode', ['speed', 'fidelity', 'node-llama-cpp'] as const);
  const validityIn = s.object(o.validity, 'validity');
  const validity = {
    valid: s.bool(validityIn.valid, 'validity.valid'),
    reason: s.textOrNull(validityIn.reason, 'validity.reason'),
    affected: s.boolOrNull(validityIn.affected, 'validity.affected'),
    backends: s.list(validityIn.backends, 'validity.backends', (x, f) => s.text(x, f)),
  };
  if (!validity.valid)
    fail(
      'validity',
      `is not a comparison: a patched side was not patched (${clip(validity.reason ?? 'no reason given')})`,
    );
  const stopIn = s.object(o.stop, 'stop');
  const stop = {
    reason: s.oneOf(stopIn.reason, 'stop.reason', STOP_REASONS),
    detail: s.text(stopIn.detail, 'stop.detail'),
    signal:
      stopIn.signal === null ? null : s.oneOf(stopIn.signal, 'stop.signal', ['SIGINT', 'SIGTERM', 'SIGHUP'] as const),
  };
  const failureIn = o.failure === null ? null : s.object(o.failure, 'failure');
  const failure =
    failureIn === null
      ? null
      : {
          side: s.text(failureIn.side, 'failure.side'),
          round: s.count(failureIn.round, 'failure.round'),
          exitCode: failureIn.exitCode === null ? null : s.number(failureIn.exitCode, 'failure.exitCode'),
          signal: s.textOrNull(failureIn.signal, 'failure.signal'),
          code: s.oneOf(failureIn.code, 'failure.code', [
            'ERR_BENCH_TOOL',
            'ERR_BENCH_OUTPUT',
            'ERR_BENCH_NOT_PATCHED',
          ] as const),
          message: s.text(failureIn.message, 'failure.message'),
        };
  const interval = s.object(o.interval, 'interval');
  const profiles = s.list(o.profiles, 'profiles', (x, f) => {
    const p = s.object(x, f);
    s.text(p.name, `${f}.name`);
    s.list(p.warnings, `${f}.warnings`, (w, wf) => s.text(s.object(w, wf).message, `${wf}.message`));
    return p;
  });
  const speedIn = o.speed === null ? null : o.speed;
  const fidelityIn = o.fidelity === null ? null : o.fidelity;
  if ((mode === 'fidelity') !== (speedIn === null))
    fail('speed', `must be ${mode === 'fidelity' ? 'null' : 'an array'} in mode ${mode}`);
  if ((mode === 'fidelity') !== (fidelityIn !== null))
    fail('fidelity', `must be ${mode === 'fidelity' ? 'an array' : 'null'} in mode ${mode}`);
  const greedyIn = o.greedy === undefined || o.greedy === null ? null : s.object(o.greedy, 'greedy');
  const greedy =
    greedyIn === null
      ? o.greedy
      : {
          prompt: s.text(greedyIn.prompt, 'greedy.prompt'),
          stock: s.list(greedyIn.stock, 'greedy.stock', (x, f) => step(s, x, f)),
          profiles: s.list(greedyIn.profiles, 'greedy.profiles', (x, f) => {
            const g = s.object(x, f);
            const d = g.divergence === null ? null : s.object(g.divergence, `${f}.divergence`);
            return {
              name: s.text(g.name, `${f}.name`),
              tokens: s.count(g.tokens, `${f}.tokens`),
              divergence:
                d === null
                  ? null
                  : {
                      index: s.count(d.index, `${f}.divergence.index`),
                      stock: step(s, d.stock, `${f}.divergence.stock`),
                      patched: step(s, d.patched, `${f}.divergence.patched`),
                    },
            };
          }),
        };
  const hostIn = o.host === null ? null : s.object(o.host, 'host');
  if (hostIn !== null) {
    for (const f of ['model', 'osVersion', 'osBuild', 'cpuBrand'])
      if (hostIn[f] !== undefined) s.textOrNull(hostIn[f], `host.${f}`);
    if (hostIn.isVirtualMachine !== undefined) s.boolOrNull(hostIn.isVirtualMachine, 'host.isVirtualMachine');
  }
  const partial = s.bool(o.partial, 'partial');
  if (partial === COMPLETE.includes(stop.reason))
    fail('partial', `must be ${!partial} when the measuring stopped for '${stop.reason}'`);
  return {
    ...(o as unknown as BenchResult),
    mode,
    command: s.list(o.command, 'command', (x, f) => s.text(x, f)),
    rounds: s.count(o.rounds, 'rounds'),
    provenance: s.oneOf(o.provenance, 'provenance', ['measured', 'simulated'] as const),
    interval: {
      method: s.oneOf(interval.method, 'interval.method', ['paired t interval on log ratios'] as const),
      confidence: s.number(interval.confidence, 'interval.confidence', { above: 0, max: 1 }),
    },
    profiles: profiles as unknown as BenchResult['profiles'],
    runs: s.list(o.runs, 'runs', (x, f) => run(s, x, f)),
    speed: speedIn === null ? null : s.list(speedIn, 'speed', (x, f) => speedRow(s, x, f)),
    fidelity: fidelityIn === null ? null : s.list(fidelityIn, 'fidelity', (x, f) => fidelityRow(s, x, f)),
    ...(o.control === undefined || o.control === null ? {} : { control: fidelityRow(s, o.control, 'control') }),
    ...(greedy === undefined ? {} : { greedy: greedy as BenchResult['greedy'] }),
    stop,
    partial,
    failure,
    validity,
  };
}
