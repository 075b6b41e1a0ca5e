/**
 * `bench`: a llama.cpp tool run stock and under each profile, through exec's injection, and what it measured compared.
 * Speed (llama-bench) runs in interleaved rounds whose order rotates, so drift and heat fall on every side alike;
 * fidelity (llama-perplexity) saves the stock logits once in a private folder and compares each profile with them.
 */
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BenchError } from '../core/errors.js';
import { loadNative, packageRoot, packageVersion } from '../device/native.js';
import { probe } from '../device/probe.js';
import type { DeviceReport, HostInfo } from '../device/types.js';
import { prepareExec, type PreparedExec } from '../exec/prepare.js';
import { runWithInjector, type ExecOutcome } from '../exec/run.js';
import { planPatch, refusedError, type ApplyWarning } from '../patch/plan.js';
import type { Profile } from '../patch/profiles.js';
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
import { median, rotation, spreadOf, type Spread } from './stats.js';

export const BENCH_SCHEMA = 'metal-cap-shim/bench@1' as const;

/** The most of a tool's output `bench` reads (llama-bench's JSON is kilobytes; a perplexity run's log, megabytes). */
const OUTPUT_LIMIT = 64 * 1024 * 1024;

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
  /** The shim loaded into the tool (always false for stock). */
  injectorLoaded: boolean;
  seconds: number;
}

/** One llama-bench test compared: stock tokens/s, and each profile's with its speed-up over the rounds. */
export interface SpeedRow {
  test: string;
  model: string | null;
  modelType: string | null;
  build: string | null;
  backend: string | null;
  stock: { ts: number; samples: number[] };
  profiles: { name: string; ts: number; samples: number[]; speedup: number; spread: Spread }[];
}

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
  rounds: number;
  host: HostInfo | null;
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
  /** Stopped by a signal (Ctrl-C) before every run was made: what is here was measured. */
  interrupted: boolean;
}

export interface BenchOptions {
  command: string;
  args: string[];
  sides: BenchSide[];
  rounds: number;
  mode: 'speed' | 'fidelity';
  /** fidelity: also compare a second stock run with stock's logits (the control row). */
  control?: boolean;
  force: boolean;
  /** Told once every side is checked, before the first run: the profiles as applied, with their warnings. */
  onPlanned?: (profiles: BenchResult['profiles']) => void;
  /** Told as each run starts. */
  onRun?: (run: { round: number; rounds: number; side: string; index: number; total: number }) => void;
  /** Asked between runs: true stops (Ctrl-C), with what was measured so far. */
  stopped?: () => boolean;
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
    prepared: prepareExec({ profile: side.profile, command: o.command, args: o.args, force: o.force }),
  }));
}

/** One run with the tool's stdout and stderr in files of a private folder; their text is returned. */
async function runOnce(
  o: BenchOptions,
  p: Prepared,
  args: string[],
  folder: string,
): Promise<{ outcome: ExecOutcome; stdout: string; stderr: string; seconds: number }> {
  const outFile = path.join(folder, 'stdout');
  const errFile = path.join(folder, 'stderr');
  rmSync(outFile, { force: true });
  rmSync(errFile, { force: true });
  // The folder is ours (mkdtemp, mode 0700): the files are new, and never followed links.
  const out = openSync(outFile, 'wx', 0o600);
  const errFd = openSync(errFile, 'wx', 0o600);
  const started = process.hrtime.bigint();
  try {
    const { prepared } = p;
    const options = { command: o.command, args, program: prepared.resolved, stdout: out, stderr: errFd };
    const outcome =
      prepared.injector === null
        ? await runWithInjector({ ...options, profile: null }, null, [])
        : await runWithInjector({ ...options, profile: prepared.profile }, prepared.injector, prepared.warnings);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    return { outcome, stdout: readBounded(outFile), stderr: readBounded(errFile), seconds };
  } finally {
    closeSync(out);
    closeSync(errFd);
  }
}

function readBounded(file: string): string {
  const size = statSync(file).size;
  if (size > OUTPUT_LIMIT) throw new BenchError('ERR_BENCH_OUTPUT', `the tool printed more than ${OUTPUT_LIMIT} bytes`);
  return readFileSync(file, 'utf8');
}

/** A run that did not end with exit 0 is the tool failing, never a result: the error names it and how it ended. */
function checkEnded(
  side: string,
  command: string,
  outcome: { exitCode: number | null; signal: string | null },
  stderr: string,
): void {
  if (outcome.exitCode === 0 && outcome.signal === null) return;
  const how = outcome.signal !== null ? `was killed by ${outcome.signal}` : `exited with code ${outcome.exitCode}`;
  const last = stderr.trim().split('\n').slice(-3).join(' | ');
  throw new BenchError('ERR_BENCH_TOOL', `${command} (${side}) ${how}${last ? `; its last words: ${last}` : ''}`);
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
 * plan's, and a refused plan is refused here, by exec's rule.
 */
function devicesAndPlans(sides: { side: BenchSide; warnings?: ApplyWarning[] }[], force: boolean) {
  const report = loadNative().binding === null ? null : probe({ allDevices: true });
  const stock = report?.supported ? report.devices : [];
  const host = report?.host ?? null;
  const profiles = sides
    .filter((p) => p.side.profile !== null)
    .map((p) => {
      const plan = planPatch({ devices: stock, host }, p.side.profile!, { force, env: process.env });
      if (!plan.accepted && p.warnings === undefined) throw refusedError(plan.reason, plan.detail);
      return {
        name: p.side.name,
        profile: plan.profile,
        warnings: p.warnings ?? plan.warnings,
        expected: plan.expected,
      };
    });
  return { stock, host, profiles };
}

function speedRows(sides: BenchSide[], byRun: { round: number; side: string; records: BenchRecord[] }[]): SpeedRow[] {
  const stockRuns = byRun.filter((r) => r.side === 'stock');
  const tests = stockRuns[0]?.records ?? [];
  return tests.map((first) => {
    const tsOf = (side: string) =>
      byRun
        .filter((r) => r.side === side)
        .map((r) => ({ round: r.round, ts: r.records.find((x) => x.test === first.test)?.avgTs }))
        .filter((x): x is { round: number; ts: number } => x.ts !== undefined);
    const stock = tsOf('stock');
    const stockByRound = new Map(stock.map((s) => [s.round, s.ts]));
    return {
      test: first.test,
      model: first.model,
      modelType: first.modelType,
      build: first.build,
      backend: first.backend,
      stock: { ts: median(stock.map((s) => s.ts)), samples: stock.map((s) => s.ts) },
      profiles: sides
        .filter((s) => s.profile !== null)
        .map((s) => {
          const runs = tsOf(s.name);
          // Each round's speed-up against the stock run of the same round: drift between rounds cancels.
          const ratios = runs
            .filter((r) => (stockByRound.get(r.round) ?? 0) > 0)
            .map((r) => r.ts / stockByRound.get(r.round)!);
          return {
            name: s.name,
            ts: median(runs.map((r) => r.ts)),
            samples: runs.map((r) => r.ts),
            speedup: median(ratios),
            spread: spreadOf(ratios),
          };
        }),
    };
  });
}

/** Runs the comparison. Throws before any run for what exec would refuse; a tool that fails is ERR_BENCH_TOOL. */
export async function runBench(o: BenchOptions): Promise<BenchResult> {
  const sides = prepareSides(o);
  const { stock, host, profiles } = devicesAndPlans(
    sides.map((p) => ({ side: p.side, warnings: p.prepared.warnings })),
    o.force,
  );
  o.onPlanned?.(profiles);
  const folder = mkdtempSync(path.join(tmpdir(), 'metal-cap-shim-bench-'));
  const runs: BenchRun[] = [];
  const base = {
    schema: BENCH_SCHEMA,
    packageVersion: packageVersion(),
    generatedAt: new Date().toISOString(),
    mode: o.mode,
    host,
    stock,
    profiles,
    runs,
  };
  try {
    if (o.mode === 'speed') {
      const { args, format } = withReadableOutput(o.args);
      const byRun: { round: number; side: string; records: BenchRecord[] }[] = [];
      const raw: BenchResult['records'] = [];
      const total = o.rounds * sides.length;
      let interrupted = false;
      for (let round = 0; round < o.rounds && !interrupted; round++) {
        for (const i of rotation(sides.length, round)) {
          if (o.stopped?.()) {
            interrupted = true;
            break;
          }
          const p = sides[i]!;
          o.onRun?.({ round: round + 1, rounds: o.rounds, side: p.side.name, index: runs.length + 1, total });
          const r = await runOnce(o, p, args, folder);
          runs.push(runRecord(round + 1, p.side.name, r));
          if (o.stopped?.()) {
            interrupted = true;
            break;
          }
          checkEnded(p.side.name, o.command, r.outcome, r.stderr);
          // Parsed once: the records bench reads, and the values as llama-bench printed them for --json.
          const values = llamaBenchValues(r.stdout, format);
          byRun.push({ round: round + 1, side: p.side.name, records: benchRecords(values) });
          raw.push({ round: round + 1, side: p.side.name, records: values });
        }
      }
      return {
        ...base,
        command: [o.command, ...args],
        rounds: o.rounds,
        records: raw,
        speed: speedRows(
          sides.map((s) => s.side),
          byRun,
        ),
        fidelity: null,
        interrupted,
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
    const first = await runOnce(o, stockSide!, [...args, '--kl-divergence-base', logits], folder);
    runs.push(runRecord(1, 'stock', first));
    const rows: FidelityRow[] = [];
    let control: FidelityRow | null = null;
    let interrupted = o.stopped?.() ?? false;
    if (!interrupted) {
      checkEnded('stock', o.command, first.outcome, first.stderr);
      checkLogitsSaved(o.command, logits, `${first.stdout}\n${first.stderr}`);
    }
    for (const c of comparisons) {
      if (interrupted || o.stopped?.()) {
        interrupted = true;
        break;
      }
      o.onRun?.({ round: 1, rounds: 1, side: c.name, index: runs.length + 1, total });
      const r = await runOnce(o, c.p, compare, folder);
      runs.push(runRecord(1, c.p.side.name, r));
      if (o.stopped?.()) {
        interrupted = true;
        break;
      }
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
      interrupted,
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
    seconds: Number(r.seconds.toFixed(3)),
  };
}

export interface NodeLlamaCppBenchOptions {
  /** The GGUF model, as given. */
  model: string;
  /** The user's project: node-llama-cpp is resolved from here, and each child runs here. */
  cwd: string;
  sides: BenchSide[];
  rounds: number;
  force: boolean;
  promptTokens: number;
  genTokens: number;
  threads: number | null;
  /** Timed evaluations per run, after its warm-up. */
  repetitions: number;
  onPlanned?: BenchOptions['onPlanned'];
  onRun?: BenchOptions['onRun'];
  stopped?: () => boolean;
  /** Aborted on SIGINT: the running child is sent SIGINT too. */
  stop?: AbortSignal;
}

/**
 * A child's measurement as the records speedRows reads: `node-llama-cpp pp512` and `node-llama-cpp tg128`, each the
 * mean tokens/s of the run's timed repetitions with their standard deviation, as llama-bench's `avg_ts` / `stddev_ts`.
 */
function nodeLlamaCppRecords(model: string, r: ChildResult): BenchRecord[] {
  const common = {
    nDepth: 0,
    model,
    modelType: null,
    build: `${r.llamaCpp ?? 'unknown'} (node-llama-cpp ${r.nodeLlamaCpp})`,
    backend: r.gpu === false ? 'CPU' : r.gpu,
  };
  return [
    { ...common, test: `node-llama-cpp pp${r.pp.tokens}`, nPrompt: r.pp.tokens, nGen: 0, ...tokensPerSecond(r.pp) },
    { ...common, test: `node-llama-cpp tg${r.tg.tokens}`, nPrompt: 0, nGen: r.tg.tokens, ...tokensPerSecond(r.tg) },
  ];
}

/**
 * bench --node-llama-cpp: a child per side and round (rounds interleaved as for llama-bench), each timing prompt
 * processing and generation and generating greedily; throws ERR_BENCH_NO_NODE_LLAMA_CPP before anything runs when the
 * project has no node-llama-cpp, and ERR_BENCH_TOOL for a child that does not end with exit 0 (never a result).
 */
export async function runNodeLlamaCppBench(o: NodeLlamaCppBenchOptions): Promise<BenchResult> {
  const found = resolveNodeLlamaCpp(o.cwd);
  const { stock, host, profiles } = devicesAndPlans(
    o.sides.map((side) => ({ side })),
    o.force,
  );
  o.onPlanned?.(profiles);
  const applied = new Map(profiles.map((p) => [p.name, p.profile]));
  const runs: BenchRun[] = [];
  const byRun: { round: number; side: string; records: BenchRecord[] }[] = [];
  const raw: BenchResult['records'] = [];
  const firstOf = new Map<string, ChildResult>();
  const text = readFileSync(defaultFidelityText(), 'utf8');
  const total = o.rounds * o.sides.length;
  let interrupted = false;
  for (let round = 0; round < o.rounds && !interrupted; round++) {
    for (const i of rotation(o.sides.length, round)) {
      if (o.stopped?.()) {
        interrupted = true;
        break;
      }
      const side = o.sides[i]!;
      o.onRun?.({ round: round + 1, rounds: o.rounds, side: side.name, index: runs.length + 1, total });
      const r = await runChild(
        {
          cwd: o.cwd,
          model: path.resolve(o.cwd, o.model),
          profile: side.profile === null ? null : applied.get(side.name)!,
          force: o.force,
          promptTokens: o.promptTokens,
          genTokens: o.genTokens,
          threads: o.threads,
          repetitions: o.repetitions,
          text,
        },
        o.stop,
      );
      runs.push({
        round: round + 1,
        side: side.name,
        exitCode: r.exitCode,
        signal: r.signal,
        injectorLoaded: r.result?.applied ?? false,
        seconds: Number(r.seconds.toFixed(3)),
      });
      if (o.stopped?.()) {
        interrupted = true;
        break;
      }
      checkEnded(side.name, `node-llama-cpp ${found.version}`, r, r.stderr);
      if (r.result === null)
        throw new BenchError(
          'ERR_BENCH_OUTPUT',
          `the node-llama-cpp run (${side.name}) exited 0 but printed no result: ${r.problem ?? 'no output'}`,
        );
      byRun.push({ round: round + 1, side: side.name, records: nodeLlamaCppRecords(o.model, r.result) });
      raw.push({ round: round + 1, side: side.name, records: [r.result] });
      if (!firstOf.has(side.name)) firstOf.set(side.name, r.result);
    }
  }
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
  return {
    schema: BENCH_SCHEMA,
    packageVersion: packageVersion(),
    generatedAt: new Date().toISOString(),
    mode: 'node-llama-cpp',
    command: [
      `node-llama-cpp@${found.version}`,
      '--model',
      o.model,
      '--prompt-tokens',
      String(o.promptTokens),
      '--gen-tokens',
      String(o.genTokens),
      ...(o.threads === null ? [] : ['--threads', String(o.threads)]),
      '--repetitions',
      String(o.repetitions),
    ],
    rounds: o.rounds,
    host,
    stock,
    profiles,
    runs,
    records: raw,
    speed: speedRows(o.sides, byRun),
    fidelity: null,
    greedy,
    interrupted,
  };
}
