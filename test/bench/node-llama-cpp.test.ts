// bench --node-llama-cpp (lib/bench/node-llama-cpp.ts, its child node-llama-cpp-child.ts, runNodeLlamaCppBench in
// run.ts) with node-llama-cpp's real Linux CPU prebuilt: node-llama-cpp 3.22.1 and @node-llama-cpp/linux-x64 installed
// once into a project outside the clone (scripts/build/node-llama-cpp-prebuilt.mjs), on tiny deterministic models
// (scripts/build/tiny-gguf.mjs), stock and patched over the simulated Metal. The CPU build asks Metal nothing, so the
// same model gives the same greedy tokens on both sides; a patched side that loads another model (a node-llama-cpp
// wrapper that swaps the model when the shim is active) diverges; a child that dies is reported with how it ended.
import { chmodSync, existsSync, mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildMatrix, fieldReport, matrixMarkdown } from '../../lib/audit/field-report.js';
import {
  firstDivergence,
  GREEDY_TOKENS,
  marginOf,
  readChildResult,
  tokensPerSecond,
  type ChildResult,
  type GreedyStep,
} from '../../lib/bench/node-llama-cpp.js';
import {
  type NodeLlamaCppProject,
  nodeLlamaCppProject,
  PrebuiltUnavailable,
} from '../../scripts/build/node-llama-cpp-prebuilt.mjs';
import { writeTinyModel } from '../../scripts/build/tiny-gguf.mjs';
import { benchResult } from '../support/bench-result.js';
import { cli, isSimulatedPlatform, requireSimBuild, root, runCli } from '../support/helpers.js';
import { spawn, spawnSync } from 'node:child_process';

const GUEST = { METAL_CAP_SHIM_SIM_SNAPSHOT: 'vz-guest-m1-ultra-tahoe-stock' };
const dir = mkdtempSync(path.join(tmpdir(), 'mcs-bench-nlc-'));

/** The CLI run in `cwd` (the user's project), over the simulated guest. */
function benchIn(cwd: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  return spawnSync(process.execPath, [cli, 'bench', ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1', ...GUEST, ...env },
    timeout: 300_000,
  });
}

/** A bench result attached to a field report (report --bench), then the matrix of that report (--json). */
function matrixOf(name: string, benchJson: string) {
  const file = path.join(dir, `${name}.json`);
  writeFileSync(file, benchJson);
  const made = runCli(['report', '--json', '--no-doctor', '--bench', file], GUEST);
  expect([made.status, made.stderr]).toEqual([0, '']);
  const report = path.join(dir, `${name}-report.json`);
  writeFileSync(report, made.stdout);
  return JSON.parse(runCli(['matrix', '--json', report]).stdout);
}

const step = (token: number, probability: number, runnerUp: number | null): GreedyStep => ({
  token,
  text: `t${token}`,
  probability,
  runnerUp: runnerUp === null ? null : { token: token + 1, text: `t${token + 1}`, probability: runnerUp },
});

describe('comparing greedy generations', () => {
  it('the first index where the tokens differ, with both steps there; null when all agree over the shorter', () => {
    const a = [step(1, 0.5, 0.2), step(2, 0.4, 0.39), step(3, 0.9, 0.05)];
    const b = [step(1, 0.5, 0.2), step(7, 0.41, 0.4), step(3, 0.9, 0.05)];
    expect(firstDivergence(a, b)).toEqual({ index: 1, stock: a[1], patched: b[1] });
    expect(firstDivergence(a, a.slice(0, 2))).toBeNull();
    expect(firstDivergence([], a)).toBeNull();
    expect(firstDivergence([step(4, 1, null)], [step(5, 1, null)])).toEqual({
      index: 0,
      stock: step(4, 1, null),
      patched: step(5, 1, null),
    });
  });

  it("a step's margin is its probability above the runner-up's (all of it without one)", () => {
    expect(marginOf(step(1, 0.5, 0.25))).toBe(0.25);
    expect(marginOf(step(1, 0.75, null))).toBe(0.75);
  });
});

describe('a run measured like llama-bench', () => {
  it("tokens/s: the mean of each repetition's tokens/seconds and their sample standard deviation (0 for one)", () => {
    // 100 tokens in 1, 0.5 and 0.25 s: 100, 200 and 400 t/s.
    const three = tokensPerSecond({ tokens: 100, seconds: [1, 0.5, 0.25] });
    expect(three.avgTs).toBeCloseTo(700 / 3, 10);
    // Sample variance: ((100 − 233.3)² + (200 − 233.3)² + (400 − 233.3)²) / 2 = 23333.3.
    expect(three.stddevTs).toBeCloseTo(Math.sqrt(70000 / 3), 8);
    expect(tokensPerSecond({ tokens: 64, seconds: [0.5] })).toEqual({ avgTs: 128, stddevTs: 0 });
    expect(tokensPerSecond({ tokens: 10, seconds: [2, 2] })).toEqual({ avgTs: 5, stddevTs: 0 });
  });

  const good: ChildResult = {
    nodeLlamaCpp: '3.22.1',
    llamaCpp: 'v0.5.0',
    gpu: false,
    applied: false,
    notApplied: null,
    warmup: { seconds: 0.4 },
    pp: { tokens: 32, seconds: [0.01, 0.02] },
    tg: { tokens: 8, seconds: [0.1, 0.1] },
    greedy: [step(1, 0.5, 0.2)],
  };

  it("a child's last line is its result only when every field is there, with one time per repetition", () => {
    expect(readChildResult(JSON.stringify(good), 2)).toEqual({ result: good });
    expect(readChildResult(JSON.stringify(good), 3)).toEqual({
      problem: 'its result has no usable pp (its tokens and 3 times above 0), tg (its tokens and 3 times above 0)',
    });
    expect(readChildResult('node-llama-cpp warn: x', 2)).toEqual({ problem: 'its last line is not JSON' });
    expect(readChildResult('[1]', 2)).toEqual({ problem: 'its result is not an object' });
    const without = { ...good } as Partial<ChildResult>;
    delete without.warmup;
    expect(readChildResult(JSON.stringify(without), 2)).toEqual({ problem: 'its result has no usable warmup.seconds' });
    const zero = { ...good, pp: { tokens: 32, seconds: [0, 0.02] }, gpu: 1, greedy: [{ token: 'a' }] };
    expect(readChildResult(JSON.stringify(zero), 2)).toEqual({
      problem: 'its result has no usable gpu, pp (its tokens and 2 times above 0), greedy',
    });
    // Each greedy step's probabilities from 0 to 1: NaN (which JSON writes as null), 1.5, a negative runner-up.
    for (const bad of [
      step(1, Number.NaN, 0.2),
      step(1, 1.5, null),
      step(1, 0.5, -0.1),
      { ...step(1, 0.5, null), token: '1' },
    ])
      expect(readChildResult(JSON.stringify({ ...good, greedy: [bad] }), 2)).toEqual({
        problem: 'its result has no usable greedy',
      });
    expect(readChildResult(JSON.stringify({ ...good, greedy: [step(1, 1, 0)] }), 2)).toEqual({
      result: { ...good, greedy: [step(1, 1, 0)] },
    });
  });
});

describe('the matrix merges greedy comparisons per host and profile', () => {
  /** A bench --node-llama-cpp result with one greedy row per [profile, tokens, first diverging index or null]. */
  const result = (...rows: [string, number, number | null][]) =>
    benchResult({
      mode: 'node-llama-cpp',
      speed: [],
      greedy: {
        prompt: 'p',
        stock: [],
        profiles: rows.map(([name, tokens, at]) => ({
          name,
          tokens,
          divergence: at === null ? null : { index: at, stock: step(1, 0.5, 0.2), patched: step(2, 0.4, 0.3) },
        })),
      },
    });
  const report = (...rows: [string, number, number | null][]) =>
    fieldReport({ snapshot: 'vz-guest-m1-ultra-tahoe-stock', hostLabel: 'M2 Pro', bench: [result(...rows)] });

  it('the earliest divergence and the fewest tokens over the reports, with how many matched; JSON and Markdown', async () => {
    const m = buildMatrix([
      await report(['host-family', 16, null], ['cua-release', 16, 9]),
      await report(['host-family', 12, 4], ['cua-release', 16, 11]),
      await report(['host-family', 16, 7]),
    ]);
    expect(m.rows.map((r) => r.bench?.greedy)).toEqual([
      [
        { profile: 'cua-release', tokens: 16, firstDivergence: 9, same: 0, reports: 2 },
        { profile: 'host-family', tokens: 12, firstDivergence: 4, same: 1, reports: 3 },
      ],
    ]);
    const fidelity = matrixMarkdown(m).split('\n')[2]!.split(' | ').at(-1);
    expect(fidelity).toBe(
      'cua-release: greedy leaves stock at token 9 of 16 (0 of 2 reports the same); host-family: greedy leaves stock at token 4 of 12 (1 of 3 reports the same) |',
    );
    const one = buildMatrix([await report(['host-family', 16, null])]);
    expect(one.rows[0]!.bench!.greedy).toEqual([
      { profile: 'host-family', tokens: 16, firstDivergence: null, same: 1, reports: 1 },
    ]);
    expect(matrixMarkdown(one).split('\n')[2]!.split(' | ').at(-1)).toBe('host-family: greedy same 16 tokens |');
  });

  it('a matrix read back checks the greedy rows, and one written before them reads as none', async () => {
    const m = buildMatrix([await report(['host-family', 16, 3])]);
    const older = structuredClone(m);
    delete (older.rows[0]!.bench as { greedy?: unknown }).greedy;
    expect(matrixMarkdown(older).split('\n')[2]!.split(' | ').at(-1)).toBe('– |');
    const bad = structuredClone(m);
    bad.rows[0]!.bench!.greedy[0]!.firstDivergence = -1;
    expect(() => matrixMarkdown(bad)).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_OPTIONS', option: 'rows[0].bench.greedy[0].firstDivergence' }),
    );
    expect(matrixMarkdown(structuredClone(m))).toBe(matrixMarkdown(m));
  });
});

describe('a refused profile, before any child runs', () => {
  it('is refused with the code of its reason, as exec refuses it (exit 3)', () => {
    requireSimBuild();
    const project = mkdtempSync(path.join(tmpdir(), 'mcs-refused-nlc-'));
    const pkg = path.join(project, 'node_modules', 'node-llama-cpp');
    mkdirSync(pkg, { recursive: true });
    writeFileSync(
      path.join(pkg, 'package.json'),
      JSON.stringify({ name: 'node-llama-cpp', version: '3.6.0', type: 'module', exports: { '.': './index.js' } }),
    );
    writeFileSync(path.join(pkg, 'index.js'), 'throw new Error("no child may load node-llama-cpp here");\n');
    const refused = (profile: string, snapshot = GUEST.METAL_CAP_SHIM_SIM_SNAPSHOT) => {
      const args = ['--node-llama-cpp', '--model', 'm.gguf', '--json', '--profile', profile];
      const r = benchIn(project, args, { METAL_CAP_SHIM_SIM_SNAPSHOT: snapshot });
      return [r.status, (JSON.parse(r.stdout) as { error: { code: string } }).error.code];
    };
    // Generation 17 is above the M1 Ultra host's 13.
    expect(refused('{"mlxArchitecture": "applegpu_g17s"}')).toEqual([3, 'ERR_MLX_ARCHITECTURE_REFUSED']);
    expect(refused('cua-release', 'm1-ultra-bare-metal')).toEqual([3, 'ERR_REFUSED_BARE_METAL']);
    expect(refused('host', 'macbookpro16-intel-amd-two-gpus')).toEqual([3, 'ERR_HOST_UNKNOWN']);
  });
});

describe('a project without node-llama-cpp', () => {
  it('is told to install it, with a stable code, before anything runs (exit 2)', () => {
    requireSimBuild();
    // In a folder anyone may write, as /tmp: the search for node-llama-cpp stops there, and says so.
    const shared = realpathSync(mkdtempSync(path.join(tmpdir(), 'mcs-shared-')));
    chmodSync(shared, 0o1777);
    const empty = mkdtempSync(path.join(shared, 'mcs-no-nlc-'));
    const r = benchIn(empty, ['--node-llama-cpp', '--model', 'm.gguf']);
    expect([r.status, r.stdout]).toEqual([2, '']);
    expect(r.stderr).toBe(
      `metal-cap-shim: ERR_BENCH_NO_NODE_LLAMA_CPP: node-llama-cpp is not installed in ${empty} (bench --node-llama-cpp uses your project's own); the search stopped at ${shared}, which can be written by other users (mode 1777) (a package there could have been planted by another user): run bench from your project's folder or name it with --project DIR, or install it there with \`npm install node-llama-cpp\`\n`,
    );
    const json = benchIn(empty, ['--node-llama-cpp', '--model', 'm.gguf', '--json']);
    expect([json.status, JSON.parse(json.stdout).error.code]).toEqual([2, 'ERR_BENCH_NO_NODE_LLAMA_CPP']);
  });

  it('--repetitions is a whole number from 1 to 100, checked before node-llama-cpp is looked for', () => {
    requireSimBuild();
    const empty = mkdtempSync(path.join(tmpdir(), 'mcs-no-nlc-'));
    for (const bad of ['0', '101', '1.5']) {
      const r = benchIn(empty, ['--node-llama-cpp', '--model', 'm.gguf', '--repetitions', bad]);
      expect([r.status, r.stdout, r.stderr]).toEqual([
        2,
        '',
        `metal-cap-shim: ERR_USAGE: --repetitions takes a whole number from 1 to 100, not '${bad}'\nRun \`metal-cap-shim bench --help\` for usage.\n`,
      ]);
    }
    const edge = benchIn(empty, ['--node-llama-cpp', '--model', 'm.gguf', '--repetitions', '100', '--json']);
    expect([edge.status, JSON.parse(edge.stdout).error.code]).toEqual([2, 'ERR_BENCH_NO_NODE_LLAMA_CPP']);
  });

  it('one older than 3.6.0 is refused the same way, saying to update it', () => {
    requireSimBuild();
    const old = mkdtempSync(path.join(tmpdir(), 'mcs-old-nlc-'));
    const pkg = path.join(old, 'node_modules', 'node-llama-cpp');
    mkdirSync(pkg, { recursive: true });
    writeFileSync(
      path.join(pkg, 'package.json'),
      JSON.stringify({ name: 'node-llama-cpp', version: '3.5.2', type: 'module', exports: { '.': './index.js' } }),
    );
    writeFileSync(path.join(pkg, 'index.js'), 'export {};\n');
    const r = benchIn(old, ['--node-llama-cpp', '--model', 'm.gguf']);
    expect([r.status, r.stdout, r.stderr]).toEqual([
      2,
      '',
      `metal-cap-shim: ERR_BENCH_NO_NODE_LLAMA_CPP: node-llama-cpp 3.5.2 in ${old} is older than 3.6.0, the first bench --node-llama-cpp can drive (evaluateWithMetadata): update it there with \`npm install node-llama-cpp@latest\`\n`,
    ]);
  });
});

let skipReason: string | null = null;
let project: NodeLlamaCppProject;
try {
  project = await nodeLlamaCppProject();
} catch (err) {
  if (!(err instanceof PrebuiltUnavailable)) throw err;
  skipReason = `node-llama-cpp's Linux CPU prebuilt cannot be had here: ${err.message}`;
  console.warn(`test/bench/node-llama-cpp.test.ts skipped: ${skipReason}`);
}

/**
 * A project whose node-llama-cpp is the real one wrapped: when the shim is active in the process (the patched side),
 * `behaviour` decides what getLlama does: load `other` instead of the model asked for, or end the process.
 */
function wrappedProject(name: string, body: string): string {
  const p = path.join(dir, name);
  const pkg = path.join(p, 'node_modules', 'node-llama-cpp');
  mkdirSync(pkg, { recursive: true });
  writeFileSync(path.join(p, 'package.json'), '{"private": true, "type": "module"}\n');
  writeFileSync(
    path.join(pkg, 'package.json'),
    JSON.stringify({
      name: 'node-llama-cpp',
      version: '3.22.1-wrapped',
      type: 'module',
      exports: { '.': './index.js' },
    }),
  );
  const real = pathToFileURL(path.join(project.dir, 'node_modules', 'node-llama-cpp', 'dist', 'index.js')).href;
  const shim = pathToFileURL(path.join(root, 'dist', 'index.js')).href;
  writeFileSync(
    path.join(pkg, 'index.js'),
    `import * as real from ${JSON.stringify(real)};
import { status } from ${JSON.stringify(shim)};
export * from ${JSON.stringify(real)};
export async function getLlama(options) {
  const llama = await real.getLlama(options);
  if (status().active) {
${body}
  }
  return llama;
}
`,
  );
  return p;
}

describe.skipIf(skipReason !== null || !isSimulatedPlatform)(
  "bench --node-llama-cpp with node-llama-cpp's real prebuilt",
  () => {
    const model = path.join(dir, 'tiny-1.gguf');
    const other = path.join(dir, 'tiny-2.gguf');
    const SMALL = ['--prompt-tokens', '32', '--gen-tokens', '8', '--threads', '1'];

    beforeAll(() => {
      requireSimBuild();
      writeTinyModel(model, { seed: 1, vocab: project.vocab });
      writeTinyModel(other, { seed: 2, vocab: project.vocab });
    });

    it('stock and patched in interleaved rounds, the profile applied before getLlama(); the same greedy tokens', () => {
      const r = benchIn(project.dir, [
        '--node-llama-cpp',
        '--model',
        model,
        '--rounds',
        '2',
        '--repetitions',
        '2',
        '--json',
        ...SMALL,
      ]);
      expect([r.status, r.stderr]).toEqual([0, '']);
      const result = JSON.parse(r.stdout);
      expect([result.schema, result.mode, result.command, result.rounds, result.fidelity, result.partial]).toEqual([
        'metal-cap-shim/bench@2',
        'node-llama-cpp',
        // The model's file name: where it lies on this machine stays here.
        [
          'node-llama-cpp@3.22.1',
          '--model',
          'tiny-1.gguf',
          '--prompt-tokens',
          '32',
          '--gen-tokens',
          '8',
          '--threads',
          '1',
          '--repetitions',
          '2',
        ],
        2,
        null,
        false,
      ]);
      // node-llama-cpp's CPU prebuilt: a backend no profile changes, valid, and said.
      expect(result.validity).toEqual({ valid: true, reason: null, affected: false, backends: ['CPU'] });
      expect(
        result.runs.map((x: { side: string; injectorLoaded: boolean; exitCode: number; signal: null }) => [
          x.side,
          x.injectorLoaded,
          x.exitCode,
          x.signal,
        ]),
      ).toEqual([
        ['stock', false, 0, null],
        ['host-family', true, 0, null],
        ['host-family', true, 0, null],
        ['stock', false, 0, null],
      ]);
      const build = `${project.release} (node-llama-cpp ${project.version})`;
      expect(
        result.speed.map((row: { test: string; build: string; backend: string; model: string }) => [
          row.test,
          row.build,
          row.backend,
          row.model,
        ]),
      ).toEqual([
        ['node-llama-cpp pp32', build, 'CPU', 'tiny-1.gguf'],
        ['node-llama-cpp tg8', build, 'CPU', 'tiny-1.gguf'],
      ]);
      for (const row of result.speed) {
        expect(row.stock.samples).toHaveLength(2);
        expect(row.stock.ts).toBeGreaterThan(0);
        const p = row.profiles[0];
        expect(p.ratios).toHaveLength(2);
        expect(p.speedup.centre).toBeGreaterThan(0);
        expect(p.speedup.low).toBeLessThanOrEqual(p.speedup.centre);
        expect(p.speedup.high).toBeGreaterThanOrEqual(p.speedup.centre);
      }
      // Each run's own measurement, as the child reported it: a warm-up, then two timed repetitions of each test.
      for (const run of result.records) {
        const [m] = run.records;
        expect([
          m.nodeLlamaCpp,
          m.llamaCpp,
          m.gpu,
          m.applied,
          m.pp.tokens,
          m.pp.seconds.length,
          m.tg.tokens,
          m.tg.seconds.length,
          m.greedy.length,
        ]).toEqual([project.version, project.release, false, run.side !== 'stock', 32, 2, 8, 2, GREEDY_TOKENS]);
        expect(m.notApplied).toBeNull();
        expect(m.warmup.seconds).toBeGreaterThan(0);
        expect(m.warmup.seconds).toBeLessThan(60);
      }
      // A row's samples are each run's mean over its repetitions (llama-bench's avg_ts), in the order of the rounds.
      const meansOf = (side: string, test: 'pp' | 'tg') =>
        result.records
          .filter((x: { side: string }) => x.side === side)
          .map((x: { records: ChildResult[] }) => tokensPerSecond(x.records[0]![test]).avgTs);
      expect(result.speed.map((row: { stock: { samples: number[] } }) => row.stock.samples)).toEqual([
        meansOf('stock', 'pp'),
        meansOf('stock', 'tg'),
      ]);
      expect(result.speed.map((row: { profiles: { samples: number[] }[] }) => row.profiles[0]!.samples)).toEqual([
        meansOf('host-family', 'pp'),
        meansOf('host-family', 'tg'),
      ]);
      const { greedy } = result;
      expect(greedy.profiles).toEqual([{ name: 'host-family', tokens: GREEDY_TOKENS, divergence: null }]);
      expect(greedy.stock).toHaveLength(GREEDY_TOKENS);
      for (const s of greedy.stock as GreedyStep[]) {
        expect(s.probability).toBeGreaterThan(0);
        expect(s.probability).toBeLessThanOrEqual(1);
        expect(s.runnerUp!.probability).toBeGreaterThan(0);
        expect(s.runnerUp!.probability).toBeLessThanOrEqual(s.probability);
        expect(s.runnerUp!.token).not.toBe(s.token);
      }
      // Every run of the same model made the same tokens: stock against stock too.
      const tokensOf = (m: { greedy: GreedyStep[] }) => m.greedy.map((s) => s.token);
      const all = result.records.map((x: { records: { greedy: GreedyStep[] }[] }) => tokensOf(x.records[0]!));
      expect(new Set(all.map((t: number[]) => t.join(','))).size).toBe(1);

      // The result travels like llama-bench's: report --bench, then the matrix's speed-ups per test.
      const matrix = matrixOf('nlc', r.stdout);
      expect(
        matrix.rows[0].bench.speed.map((s: { profile: string; test: string; builds: string[] }) => [
          s.profile,
          s.test,
          s.builds,
        ]),
      ).toEqual([
        ['host-family', 'node-llama-cpp pp32 tiny-1.gguf', [build]],
        ['host-family', 'node-llama-cpp tg8 tiny-1.gguf', [build]],
      ]);
      expect(matrix.rows[0].bench.greedy).toEqual([
        { profile: 'host-family', tokens: GREEDY_TOKENS, firstDivergence: null, same: 1, reports: 1 },
      ]);
    }, 300_000);

    it('a patched side that runs another model diverges: the first diverging index and both choices there; exit 1', () => {
      const p = wrappedProject(
        'other-model',
        `    const load = llama.loadModel.bind(llama);
    llama.loadModel = (o) => load({ ...o, modelPath: ${JSON.stringify(other)} });`,
      );
      const r = benchIn(p, ['--node-llama-cpp', '--model', model, '--rounds', '1', '--json', ...SMALL]);
      expect([r.status, r.stderr]).toEqual([1, '']);
      const result = JSON.parse(r.stdout);
      const [stockRun, patchedRun] = result.records.map((x: { records: { greedy: GreedyStep[] }[] }) => x.records[0]);
      const [row] = result.greedy.profiles;
      const i = row.divergence.index;
      expect(i).toBeGreaterThanOrEqual(0);
      expect(i).toBeLessThan(GREEDY_TOKENS);
      const stockTokens = stockRun.greedy.map((s: GreedyStep) => s.token);
      const patchedTokens = patchedRun.greedy.map((s: GreedyStep) => s.token);
      // Index i is the first difference: the same tokens before it, another one at it.
      expect(patchedTokens.slice(0, i)).toEqual(stockTokens.slice(0, i));
      expect(patchedTokens[i]).not.toBe(stockTokens[i]);
      expect(row).toEqual({
        name: 'host-family',
        tokens: GREEDY_TOKENS,
        divergence: { index: i, stock: stockRun.greedy[i], patched: patchedRun.greedy[i] },
      });
      // The matrix keeps where it left stock.
      expect(matrixOf('nlc-other', r.stdout).rows[0].bench.greedy).toEqual([
        { profile: 'host-family', tokens: GREEDY_TOKENS, firstDivergence: i, same: 0, reports: 1 },
      ]);
      // The table names it, with each side's token and margin there.
      const table = benchIn(p, ['--node-llama-cpp', '--model', model, '--rounds', '1', ...SMALL]);
      expect(table.status).toBe(1);
      // Each side's warm-up, timed apart, one line after the speed table.
      expect(table.stdout).toMatch(
        /\.\n\nWarm-up \(pipeline compile\) per side: stock \d+\.\d\d s, host-family \d+\.\d\d s \(medians over rounds\)\.\n/,
      );
      expect(table.stdout).toMatch(
        new RegExp(
          `\\| host-family \\| token ${i} of ${GREEDY_TOKENS} \\| ".*" \\(${stockTokens[i]}\\) p 0\\.\\d{4}, margin 0\\.\\d{4} \\| ".*" \\(\\d+\\) p 0\\.\\d{4}, margin 0\\.\\d{4} \\|`,
        ),
      );
    }, 300_000);

    it('SIGINT to bench alone stops the running child too, prints what was measured so far, and exits 130', async () => {
      // The patched child says it is running, then waits ten minutes: only a forwarded SIGINT ends it in time.
      const running = path.join(dir, 'patched-running');
      const hangs = wrappedProject(
        'hangs',
        `    (await import('node:fs')).writeFileSync(${JSON.stringify(running)}, '');
    await new Promise((r) => setTimeout(r, 600_000));`,
      );
      const child = spawn(
        process.execPath,
        [cli, 'bench', '--node-llama-cpp', '--model', model, '--rounds', '2', '--json', ...SMALL],
        { cwd: hangs, env: { ...process.env, NO_COLOR: '1', ...GUEST } },
      );
      let stdout = '';
      child.stdout.on('data', (d) => {
        stdout += d;
      });
      const closed = new Promise<number | null>((done) => child.on('close', (code) => done(code)));
      for (let waited = 0; !existsSync(running) && waited < 600; waited++) await new Promise((r) => setTimeout(r, 100));
      child.kill('SIGINT');
      const status = await closed;
      const result = JSON.parse(stdout);
      expect([status, result.partial, result.stop.signal]).toEqual([130, true, 'SIGINT']);
      expect(result.runs.map((r: { side: string; signal: string | null }) => [r.side, r.signal])).toEqual([
        ['stock', null],
        ['host-family', 'SIGINT'],
      ]);
      // No round finished: no row, and no greedy comparison to make.
      expect(result.speed).toEqual([]);
      expect(result.greedy.profiles).toEqual([]);
    }, 120_000);

    it('a child that dies is reported with how it ended, never as a result', () => {
      const killed = wrappedProject('killed', "    process.kill(process.pid, 'SIGKILL');");
      const r = benchIn(killed, ['--node-llama-cpp', '--model', model, '--rounds', '1', '--json', ...SMALL]);
      expect(r.status).toBe(1);
      const { failure, partial, speed } = JSON.parse(r.stdout);
      expect([failure, partial, speed]).toEqual([
        {
          side: 'host-family',
          round: 1,
          exitCode: null,
          signal: 'SIGKILL',
          code: 'ERR_BENCH_TOOL',
          message: 'node-llama-cpp 3.22.1-wrapped (host-family) was killed by SIGKILL',
        },
        true,
        [],
      ]);

      const exited = wrappedProject(
        'exited',
        "    process.stderr.write('out of memory, say\\n');\n    process.exit(7);",
      );
      const e = benchIn(exited, ['--node-llama-cpp', '--model', model, '--rounds', '1', ...SMALL]);
      expect(e.status).toBe(1);
      expect(e.stdout).toContain('Failed run: host-family, round 1 (exit 7): ');
      expect(e.stderr).toBe(
        'metal-cap-shim: ERR_BENCH_TOOL: node-llama-cpp 3.22.1-wrapped (host-family) exited with code 7; its last words: out of memory, say (round 1); no round finished\n',
      );
    }, 300_000);
  },
);
