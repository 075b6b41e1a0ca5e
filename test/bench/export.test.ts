// bench's export for llama.cpp's own scripts/compare-llama-bench.py: every llama-bench record of every run, each side
// its own build_commit, the model's file name alone. The script itself, from the llama.cpp source node-llama-cpp
// bundles (the newest conformance era's tarball, cached by test/conformance/build.mjs), reads the export and compares
// stock with each profile; its numbers are checked against the records' avg_ts.
import { execFile, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { exportCommits, llamaBenchExport, resultCommits } from '../../lib/bench/export.js';
import type { BenchResult } from '../../lib/bench/run.js';
import { UsageError } from '../../lib/core/errors.js';
import { TOOLS_ERA } from '../../scripts/build/llama-tools.mjs';
import { cloneBundle, fetchTarball } from '../conformance/build.mjs';
import { describeSim, requireSimBuild, root, runCli, thrown } from '../support/helpers.js';

const run = promisify(execFile);
const dir = mkdtempSync(path.join(tmpdir(), 'mcs-export-'));
const GUEST = { METAL_CAP_SHIM_SIM_SNAPSHOT: 'vz-guest-m1-ultra-tahoe-stock' };

/** llama-bench's real records (v0.5.0, the CPU build of the suite: pp32 and tg8), as it printed them. */
const REAL: Record<string, unknown>[] = JSON.parse(
  readFileSync(path.join(root, 'test', 'fixtures', 'bench', 'llama-bench.json'), 'utf8'),
);

const SIDES = ['stock', 'host-family', 'cua-release'];

/**
 * A speed result of three rounds: each run's records are the real ones swept over flash attention (-fa 0,1), at a
 * folder path, with avg_ts made distinct per side, round and record. The export reads mode, profiles and records.
 */
function fixtureResult(): BenchResult {
  const records = [1, 2, 3].flatMap((round) =>
    SIDES.map((side, s) => ({
      round,
      side,
      records: [0, 1].flatMap((fa) =>
        REAL.map((r, i) => ({
          ...r,
          model_filename: '/Users/someone/models/tiny-1.gguf',
          flash_attn: fa,
          avg_ts: Number(r.avg_ts) * (1 + s * 0.5 + fa * 0.25) * (1 + 0.01 * round * (i + 1)),
        })),
      ),
    })),
  );
  return {
    mode: 'speed',
    profiles: SIDES.slice(1).map((name) => ({ name })),
    records,
  } as unknown as BenchResult;
}

describe('the export', () => {
  it('gives each side one build_commit the script can take: safe, padded to one length, distinct', () => {
    expect(Object.fromEntries(exportCommits(SIDES))).toEqual({
      stock: 'stock______',
      'host-family': 'host-family',
      'cua-release': 'cua-release',
    });
    const hostile = ['stock', "x'; DROP TABLE llama_bench; --", 'a b', 'a-b', '', 'é', '-b'];
    const commits = [...exportCommits(hostile).values()];
    expect(commits).toEqual([
      'stock_________________________',
      'x---DROP-TABLE-llama-bench----',
      'a-b___________________________',
      'a-b.3_________________________',
      'side__________________________',
      'side-_________________________',
      'side-b________________________',
    ]);
    expect(new Set(commits).size).toBe(hostile.length);
  });

  it('writes every record of every run, build_commit its side, the model without its folders, the rest as printed', () => {
    const result = fixtureResult();
    const lines = llamaBenchExport(result).split('\n');
    expect(lines.pop()).toBe('');
    const commits = resultCommits(result);
    expect(lines.map((l) => JSON.parse(l))).toEqual(
      result.records.flatMap((run) =>
        (run.records as Record<string, unknown>[]).map((r) => ({
          ...r,
          build_commit: commits.get(run.side),
          model_filename: 'tiny-1.gguf',
        })),
      ),
    );
  });

  it('takes a Windows path to its file name too, leaves a record without one as it is, skips what is no record', () => {
    const result = fixtureResult();
    result.records = [
      { round: 1, side: 'stock', records: [{ ...REAL[0], model_filename: 'C:\\models\\q4\\tiny.gguf' }] },
      { round: 1, side: 'host-family', records: [{ n_prompt: 32, avg_ts: 5 }, 'not a record', null] },
    ];
    expect(
      llamaBenchExport(result)
        .trimEnd()
        .split('\n')
        .map((l) => {
          const r = JSON.parse(l);
          return [r.build_commit, r.model_filename];
        }),
    ).toEqual([
      ['stock______', 'tiny.gguf'],
      ['host-family', undefined],
    ]);
  });

  it('refuses a result of another mode with a usage error', () => {
    for (const mode of ['fidelity', 'node-llama-cpp'] as const) {
      const e = thrown(() => llamaBenchExport({ ...fixtureResult(), mode }));
      expect([e instanceof UsageError, (e as UsageError).message]).toEqual([
        true,
        `a ${mode} result holds no llama-bench records: only bench -- llama-bench can be exported for compare-llama-bench.py`,
      ]);
    }
  });

  it('bench --export-llama-bench is for speed: with --fidelity or --node-llama-cpp a usage error, before anything runs', () => {
    for (const mode of [
      ['--fidelity', '--', 'llama-perplexity'],
      ['--node-llama-cpp', '--model', 'm.gguf'],
    ]) {
      const r = runCli(['bench', '--export-llama-bench', path.join(dir, 'x.jsonl'), ...mode]);
      expect([r.status, r.stderr.split('\n')[0]]).toEqual([
        2,
        'metal-cap-shim: ERR_USAGE: --export-llama-bench writes llama-bench records: it is for speed (bench -- llama-bench)',
      ]);
    }
    expect(existsSync(path.join(dir, 'x.jsonl'))).toBe(false);
  });
});

// --- llama.cpp's own script -----------------------------------------------------------------------------------------

// Debian's python3 with GitPython and tabulate (python3-git, python3-tabulate): not a pyenv python on PATH.
const PYTHON = '/usr/bin/python3';
const pythonReady = spawnSync(PYTHON, ['-c', 'import git, tabulate'], { encoding: 'utf8' }).status === 0;
const skipScript = !pythonReady && process.env.CI === undefined;
if (skipScript)
  console.warn(
    'test/bench/export.test.ts: compare-llama-bench.py skipped: /usr/bin/python3 lacks GitPython or tabulate (apt-get install python3-git python3-tabulate)',
  );

/** compare-llama-bench.py from the llama.cpp source the newest era's node-llama-cpp tarball bundles. */
async function compareScript(): Promise<string> {
  const tgz = await fetchTarball(TOOLS_ERA.package, TOOLS_ERA.integrity);
  const work = mkdtempSync(path.join(dir, 'bundle-'));
  const { repo } = await cloneBundle(tgz, work);
  const file = path.join(dir, 'compare-llama-bench.py');
  const { stdout } = await run('git', ['-C', repo, 'show', 'HEAD:scripts/compare-llama-bench.py'], {
    maxBuffer: 8 << 20,
  });
  writeFileSync(file, stdout);
  return file;
}

/** The script's table (-o tsv) comparing `baseline` with `compare` in `file`: one object per row, by header. */
async function compare(script: string, file: string, baseline: string, other: string) {
  // Run outside any git repository: given -b and -c, the script needs none.
  const { stdout } = await run(
    PYTHON,
    [script, '-t', 'llama-bench', '-i', file, '-b', baseline, '-c', other, '-o', 'tsv'],
    { cwd: dir },
  );
  const [header, ...rows] = stdout.trimEnd().split('\n');
  const names = header!.split('\t').map((h) => h.trim());
  return rows.map((row) => Object.fromEntries(row.split('\t').map((v, i) => [names[i]!, v.trim()])));
}

/** What the script must print for a side against stock: per test and key, the mean avg_ts of each side, their ratio. */
function expectedRows(result: BenchResult, side: string, key: (r: Record<string, unknown>) => string) {
  const mean = (s: string, k: string) => {
    const ts = result.records
      .filter((run) => run.side === s)
      .flatMap((run) => run.records as Record<string, unknown>[])
      .filter((r) => key(r) === k)
      .map((r) => Number(r.avg_ts));
    return ts.reduce((a, b) => a + b, 0) / ts.length;
  };
  const keys = [
    ...new Set(result.records.flatMap((run) => (run.records as Record<string, unknown>[]).map((r) => key(r)))),
  ];
  return new Map(keys.map((k) => [k, [mean('stock', k), mean(side, k), mean(side, k) / mean('stock', k)]]));
}

const testName = (r: Record<string, unknown>) => (Number(r.n_gen) === 0 ? `pp${r.n_prompt}` : `tg${r.n_gen}`);

describe.skipIf(skipScript)("llama.cpp's compare-llama-bench.py reads the export", () => {
  let script = '';
  beforeAll(async () => {
    script = await compareScript();
  }, 180_000);

  it('compares stock with each profile, one row per test and flash-attention setting, with the records’ numbers', async () => {
    const result = fixtureResult();
    const file = path.join(dir, 'fixture.jsonl');
    writeFileSync(file, llamaBenchExport(result));
    const commits = resultCommits(result);
    for (const side of ['host-family', 'cua-release']) {
      const rows = await compare(script, file, commits.get('stock')!, commits.get(side)!);
      const expected = expectedRows(result, side, (r) => `${testName(r)} fa=${r.flash_attn}`);
      expect(rows.map((r) => `${r.Test} fa=${r.FlashAttention === 'Yes' ? 1 : 0}`).sort()).toEqual(
        [...expected.keys()].sort(),
      );
      for (const row of rows) {
        const [stock, patched, speedup] = expected.get(`${row.Test} fa=${row.FlashAttention === 'Yes' ? 1 : 0}`)!;
        expect([row[`t/s ${commits.get('stock')}`], row[`t/s ${commits.get(side)}`], row.Speedup]).toEqual([
          stock!.toFixed(2),
          patched!.toFixed(2),
          speedup!.toFixed(2),
        ]);
      }
    }
  });

  describeSim('bench --export-llama-bench, end to end over the simulated Metal', () => {
    beforeAll(requireSimBuild);

    it('writes the export of what it measured, says how to compare, and the script reads it', async () => {
      // llama-bench's real records, avg_ts set per side (the shim loaded or not) and run.
      const template = path.join(dir, 'records.json');
      writeFileSync(
        template,
        JSON.stringify(REAL.map((r, i) => ({ ...r, model_filename: '/srv/models/tiny-1.gguf', avg_ts: `@TS${i}@` }))),
      );
      const fake = path.join(dir, 'llama-bench');
      writeFileSync(
        fake,
        `#!/bin/sh
side=stock; a=1000; b=100
[ -n "$LD_PRELOAD" ] && side=patched && a=3000 && b=250
n=$(cat "${dir}/n.$side" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "${dir}/n.$side"
sed -e "s/\\"@TS0@\\"/$((a + n * 37))/" -e "s/\\"@TS1@\\"/$((b + n * 3))/" "${template}"
`,
      );
      chmodSync(fake, 0o755);
      const file = path.join(dir, 'bench.jsonl');
      const r = runCli(
        ['bench', '--rounds', '3', '--profile', 'host-family', '--json', '--export-llama-bench', file, '--', fake],
        GUEST,
      );
      expect([r.status, r.stderr]).toEqual([
        0,
        `metal-cap-shim: wrote ${file}; llama.cpp's scripts/compare-llama-bench.py -t llama-bench -i ${file} -b stock______ -c P compares stock with P, P one of: host-family\n`,
      ]);
      const result = JSON.parse(r.stdout) as BenchResult;
      expect(readFileSync(file, 'utf8')).toBe(llamaBenchExport(result));
      const rows = await compare(script, file, 'stock______', 'host-family');
      const expected = expectedRows(result, 'host-family', testName);
      expect(rows.map((row) => [row.Test, row['t/s stock______'], row['t/s host-family'], row.Speedup])).toEqual(
        [...expected].map(([test, [stock, patched, speedup]]) => [
          test,
          stock!.toFixed(2),
          patched!.toFixed(2),
          speedup!.toFixed(2),
        ]),
      );
    });
  });
});
