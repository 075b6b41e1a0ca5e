// `bench` end to end through the CLI over the simulated Metal (lib/bench/run.ts, lib/cli/bench.ts): the orchestration,
// the interleaved rounds, the statistics and the verdicts, with small scripts standing in for llama-bench and
// llama-perplexity (the real tools run in test/bench/run.real-tools.test.ts). A script sees whether the shim was injected
// (LD_PRELOAD, as the injector is preloaded on Linux) and answers accordingly, so a speed-up or a divergence is the
// injection's doing.
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { matrixMarkdown } from '../../lib/audit/field-report.js';
import { cli, describeSim, requireSimBuild, runCli } from '../support/helpers.js';

const dir = mkdtempSync(path.join(tmpdir(), 'mcs-bench-'));
const GUEST = { METAL_CAP_SHIM_SIM_SNAPSHOT: 'vz-guest-m1-ultra-tahoe-stock' };

function script(name: string, body: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, `#!/bin/sh\n${body}\n`);
  chmodSync(file, 0o755);
  return file;
}

/** llama-bench: pp512 at 100 t/s and tg128 at 10 stock; twice that with the shim; each run appends its side to LOG. */
const LOG = path.join(dir, 'runs.log');
const FAKE_BENCH = script(
  'llama-bench',
  `ts=100; side=stock
[ -n "$LD_PRELOAD" ] && ts=200 && side=patched
echo "$side $*" >> ${JSON.stringify(LOG)}
echo '[{"build_commit":"abc1234","build_number":7010,"backends":"CPU","model_filename":"tiny.gguf","model_type":"llama ?B F32","n_prompt":512,"n_gen":0,"avg_ts":'$ts',"stddev_ts":1},{"build_number":7010,"build_commit":"abc1234","n_prompt":0,"n_gen":128,"avg_ts":'$((ts / 10))',"stddev_ts":0.1}]'`,
);

/**
 * llama-perplexity: saves "logits" with --kl-divergence-base alone; compares with --kl-divergence: KLD 0.5 patched with
 * $DIVERGE, 0.002 unpatched with $NOISY. With $SHORT, the stock run says the text is too short, in the tool's words, and
 * leaves the 12-byte header the real tool leaves.
 */
const FAKE_PERPLEXITY = script(
  'llama-perplexity',
  `base=""; kld=0; prev=""
for a in "$@"; do
  [ "$prev" = "--kl-divergence-base" ] && base="$a"
  [ "$a" = "--kl-divergence" ] && kld=1
  prev="$a"
done
if [ $kld = 0 ] && [ -n "$SHORT" ]; then
  printf '_logits_\\100\\0\\0\\0' > "$base"
  echo "perplexity: you need at least 128 tokens to evaluate perplexity with a context of 64" >&2
  echo "perplexity: the data file you provided tokenizes to only 40 tokens" >&2
  exit 0
fi
if [ $kld = 0 ]; then echo "_logits_ and every chunk's log-probabilities" > "$base"; echo "Final estimate: PPL = 5.4 +/- 0.6"; exit 0; fi
[ -s "$base" ] || { echo "failed to open $base" >&2; exit 0; }
k=0.00000; top=100.000
[ -n "$LD_PRELOAD" ] && [ -n "$DIVERGE" ] && k=0.50000 && top=62.500
[ -z "$LD_PRELOAD" ] && [ -n "$NOISY" ] && k=0.00200
echo "chunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence              Δp RMS            Same top p"
echo "   1       1.9283 ±    0.3726       0.00000 ±    0.00003       $k ±    0.00000     0.000 ±  0.000 %    $top ±  0.000 %"`,
);

const bench = (args: string[], env: Record<string, string> = {}) => runCli(['bench', ...args], { ...GUEST, ...env });

describeSim('bench, end to end over the simulated Metal', () => {
  beforeAll(requireSimBuild);

  it('speed: interleaved rounds, the order turning, each profile injected; speed-ups from each round against its stock', () => {
    writeFileSync(LOG, '');
    const r = bench([
      '--rounds',
      '3',
      '--profile',
      'host-family,apple7',
      '--json',
      '--',
      FAKE_BENCH,
      '-m',
      'tiny.gguf',
    ]);
    expect([r.status, r.stderr]).toEqual([0, '']);
    const result = JSON.parse(r.stdout);
    expect(result.runs.map((x: { round: number; side: string }) => `${x.round}:${x.side}`)).toEqual([
      '1:stock',
      '1:host-family',
      '1:apple7',
      '2:host-family',
      '2:apple7',
      '2:stock',
      '3:apple7',
      '3:stock',
      '3:host-family',
    ]);
    expect(result.runs.map((x: { injectorLoaded: boolean }) => x.injectorLoaded)).toEqual([
      false,
      true,
      true,
      true,
      true,
      false,
      true,
      false,
      true,
    ]);
    // The tool saw -o json added, and nothing else changed.
    expect(readFileSync(LOG, 'utf8').trim().split('\n')[0]).toBe('stock -m tiny.gguf -o json');
    expect(result.command).toEqual([FAKE_BENCH, '-m', 'tiny.gguf', '-o', 'json']);
    expect(result.speed).toEqual(
      ['pp512', 'tg128'].map((test, i) => ({
        test,
        model: i === 0 ? 'tiny.gguf' : null,
        modelType: i === 0 ? 'llama ?B F32' : null,
        build: 'b7010 (abc1234)',
        backend: i === 0 ? 'CPU' : null,
        stock: {
          ts: [100, 10][i],
          samples: [
            [100, 100, 100],
            [10, 10, 10],
          ][i],
        },
        profiles: ['host-family', 'apple7'].map((name) => ({
          name,
          ts: [200, 20][i],
          samples: [
            [200, 200, 200],
            [20, 20, 20],
          ][i],
          speedup: 2,
          spread: { min: 2, max: 2 },
        })),
      })),
    );
    expect([result.schema, result.mode, result.rounds, result.interrupted, result.fidelity]).toEqual([
      'metal-cap-shim/bench@1',
      'speed',
      3,
      false,
      null,
    ]);
    expect(result.records).toHaveLength(9);
    expect(
      result.profiles.map((p: { name: string; profile: { appleFamilyMax: unknown } }) => [
        p.name,
        p.profile.appleFamilyMax,
      ]),
    ).toEqual([
      ['host-family', 1007],
      ['apple7', 1007],
    ]);
    expect(result.stock.map((d: { families: { apple7: boolean } }) => d.families.apple7)).toEqual([false]);
    expect(result.profiles[0].expected.map((d: { families: { apple7: boolean } }) => d.families.apple7)).toEqual([
      true,
    ]);
  });

  it('speed, as a table: one row per test, stock and each profile with its speed-up', () => {
    const r = bench(['--rounds', '1', '--', FAKE_BENCH]);
    expect(r.status).toBe(0);
    expect(r.stdout.split('\n').filter((l) => l.startsWith('|'))).toEqual([
      '| test | stock t/s | host-family t/s | host-family speed-up (min–max) |',
      '|---|---|---|---|',
      '| pp512 | 100.00 | 200.00 | 2.00x (2.00x–2.00x) |',
      '| tg128 | 10.00 | 20.00 | 2.00x (2.00x–2.00x) |',
    ]);
  });

  it('fidelity: the same answers are within tolerance; the logits are saved in a private folder and removed', () => {
    const r = bench(['--fidelity', '--json', '--', FAKE_PERPLEXITY, '-m', 'tiny.gguf', '-f', 'text.txt']);
    expect([r.status, r.stderr]).toEqual([0, '']);
    const result = JSON.parse(r.stdout);
    expect(result.fidelity).toEqual([
      {
        name: 'host-family',
        meanKld: 0,
        medianKld: null,
        kld99: null,
        kld999: null,
        maxKld: null,
        sameTopP: 100,
        pplRatio: 1,
        rmsDp: 0,
        uncertainty: { meanKld: 0, sameTopP: 0, pplRatio: 0.00003, rmsDp: 0 },
        chunks: 1,
        from: 'last-row',
        verdict: 'within-tolerance',
        reasons: [],
      },
    ]);
    expect(result.control).toBeUndefined();
    expect(result.command).toEqual([
      FAKE_PERPLEXITY,
      '-m',
      'tiny.gguf',
      '-f',
      'text.txt',
      '--kl-divergence-base',
      '<logits>',
    ]);
  });

  it('fidelity: a patched side that computes something else differs, and bench exits 1', () => {
    const r = bench(['--fidelity', '--', FAKE_PERPLEXITY, '-m', 'tiny.gguf'], { DIVERGE: '1' });
    expect(r.status).toBe(1);
    expect(r.stdout).toContain(
      '| host-family | 0.500000 ± 0.000000 | – | – | – | 62.500 ± 0.000 % | 1.000000 ± 0.000030 | 0.000 ± 0.000 % | differs: mean KLD 0.5 is above 0.001; same top token 62.5 % is below 99 % |',
    );
  });

  it('fidelity --control: a second stock run against the stock logits, its row first and kept apart in the JSON', () => {
    const r = bench(['--fidelity', '--control', '--json', '--', FAKE_PERPLEXITY, '-m', 'tiny.gguf'], { NOISY: '1' });
    expect([r.status, r.stderr]).toEqual([0, '']);
    const result = JSON.parse(r.stdout);
    // The control run is a stock run: never injected, recorded as stock.
    expect(result.runs.map((x: { side: string; injectorLoaded: boolean }) => [x.side, x.injectorLoaded])).toEqual([
      ['stock', false],
      ['stock', false],
      ['host-family', true],
    ]);
    expect([result.control.name, result.control.meanKld, result.control.verdict]).toEqual([
      'stock (control)',
      0.002,
      'differs',
    ]);
    expect(result.fidelity.map((f: { name: string; verdict: string }) => [f.name, f.verdict])).toEqual([
      ['host-family', 'within-tolerance'],
    ]);
    const table = bench(['--fidelity', '--control', '--', FAKE_PERPLEXITY, '-m', 'tiny.gguf'], { NOISY: '1' });
    const rows = table.stdout.split('\n').filter((l) => l.startsWith('| '));
    expect(rows.map((l) => l.split(' | ')[0])).toEqual(['| profile', '| stock (control)', '| host-family']);
    expect(table.stdout).toContain(
      'The control (stock against its own logits) differs: the tool does not repeat itself on this machine, so a profile cannot be told from that noise.',
    );
    const quiet = bench(['--fidelity', '--control', '--', FAKE_PERPLEXITY, '-m', 'tiny.gguf']);
    expect(quiet.status).toBe(0);
    expect(quiet.stdout).not.toContain('The control');
  });

  it("fidelity: a text too short ends with the tool's own words, not a guess", () => {
    const r = bench(['--fidelity', '--json', '--', FAKE_PERPLEXITY, '-m', 'tiny.gguf'], { SHORT: '1' });
    expect(r.status).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual({
      error: {
        code: 'ERR_BENCH_TOOL',
        message: `${FAKE_PERPLEXITY} (stock) saved no logits; it said: perplexity: you need at least 128 tokens to evaluate perplexity with a context of 64; perplexity: the data file you provided tokenizes to only 40 tokens (give a longer -f text, or a smaller -c)`,
      },
    });
  });

  it('a tool that fails is reported with its exit status, never as a result', () => {
    const failing = script('failing-bench', 'echo "error: failed to load model" >&2; exit 3');
    const r = bench(['--json', '--', failing, '-m', 'missing.gguf']);
    expect(r.status).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual({
      error: {
        code: 'ERR_BENCH_TOOL',
        message: `${failing} (stock) exited with code 3; its last words: error: failed to load model`,
      },
    });
  });

  it('refused before anything runs: a raising profile on bare metal; an output bench cannot read', () => {
    writeFileSync(LOG, '');
    const bare = runCli(['bench', '--profile', 'cua-release', '--', FAKE_BENCH], {
      METAL_CAP_SHIM_SIM_SNAPSHOT: 'm1-ultra-bare-metal',
    });
    expect(bare.status).toBe(3);
    expect(bare.stderr).toMatch(/^metal-cap-shim: ERR_REFUSED_BARE_METAL: /);
    const md = bench(['--', FAKE_BENCH, '-o', 'md']);
    expect(md.status).toBe(2);
    expect(readFileSync(LOG, 'utf8')).toBe('');
  });
});

describeSim('Ctrl-C', () => {
  beforeAll(requireSimBuild);

  it('stops the tool, prints what was measured so far, and exits 130', async () => {
    // Each run prints its record at once, then waits: the first run ends, the second is interrupted.
    const slow = script(
      'slow-bench',
      `echo '[{"n_prompt":512,"n_gen":0,"avg_ts":100}]'; [ -n "$LD_PRELOAD" ] && exec sleep 30; exit 0`,
    );
    const child = spawn(process.execPath, [cli, 'bench', '--json', '--rounds', '2', '--', slow], {
      env: { ...process.env, ...GUEST },
    });
    let stdout = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    // The patched run has started when its sleep is running under bench.
    const started = Date.now();
    while (Date.now() - started < 20_000) {
      await new Promise((r) => setTimeout(r, 100));
      const ps = await new Promise<string>((done) => {
        const p = spawn('ps', ['-o', 'args=', '--ppid', String(child.pid)]);
        let out = '';
        p.stdout.on('data', (d) => {
          out += d;
        });
        p.on('close', () => done(out));
      });
      if (ps.includes('sleep 30')) break;
    }
    child.kill('SIGINT');
    const status = await new Promise<number | null>((done) => child.on('close', (code) => done(code)));
    const result = JSON.parse(stdout);
    expect([status, result.interrupted, result.runs.map((r: { side: string }) => r.side)]).toEqual([
      130,
      true,
      ['stock', 'host-family'],
    ]);
    expect(result.runs[1].signal).toBe('SIGINT');
    expect(result.speed.map((r: { test: string; stock: { ts: number } }) => [r.test, r.stock.ts])).toEqual([
      ['pp512', 100],
    ]);
  }, 40_000);
});

describe('bench options', () => {
  it('--rounds is a whole number from 1 to 100; --rounds with --fidelity and a profile named twice are usage errors', () => {
    const said = (args: string[]) => {
      const r = runCli(['bench', ...args, '--', '/bin/true']);
      return [r.status, r.stderr.split('\n')[0]];
    };
    expect(said(['--rounds', '0'])).toEqual([
      2,
      "metal-cap-shim: ERR_USAGE: --rounds takes a whole number from 1 to 100, not '0'",
    ]);
    expect(said(['--rounds', '101'])).toEqual([
      2,
      "metal-cap-shim: ERR_USAGE: --rounds takes a whole number from 1 to 100, not '101'",
    ]);
    expect(said(['--rounds', '2.5'])).toEqual([
      2,
      "metal-cap-shim: ERR_USAGE: --rounds takes a whole number from 1 to 100, not '2.5'",
    ]);
    expect(said(['--fidelity', '--rounds', '2'])).toEqual([
      2,
      'metal-cap-shim: ERR_USAGE: --rounds is for speed: --fidelity compares one run of each profile with stock',
    ]);
    expect(said(['--control'])).toEqual([
      2,
      "metal-cap-shim: ERR_USAGE: --control is for --fidelity: a second stock run compared with stock's logits",
    ]);
    expect(said(['--repetitions', '3'])).toEqual([
      2,
      'metal-cap-shim: ERR_USAGE: --repetitions is for --node-llama-cpp; a llama.cpp tool takes its own options after `--`',
    ]);
    expect(said(['--profile', 'apple7,apple7'])).toEqual([
      2,
      'metal-cap-shim: ERR_USAGE: --profile names apple7 twice: each profile is measured once a round',
    ]);
    expect(said(['--profile', 'apple7,'])).toEqual([
      2,
      "metal-cap-shim: ERR_USAGE: --profile 'apple7,' has an empty name between commas",
    ]);
    expect(said(['--profile', 'nope'])[0]).toBe(2);
    expect(existsSync(dir)).toBe(true);
  });
});

describeSim('bench results travel: report --bench, then matrix (Markdown, JSON, SVG)', () => {
  beforeAll(requireSimBuild);

  it('a field report carries both results, and the matrix shows speed-up and fidelity per host and profile', async () => {
    const speed = path.join(dir, 'speed.json');
    const fidelity = path.join(dir, 'fidelity.json');
    writeFileSync(speed, bench(['--rounds', '2', '--json', '--', FAKE_BENCH]).stdout);
    writeFileSync(fidelity, bench(['--fidelity', '--json', '--', FAKE_PERPLEXITY, '-m', 'tiny.gguf']).stdout);
    const made = runCli(
      [
        'report',
        '--json',
        '--no-doctor',
        '--host-label',
        'M1 Ultra, macOS 26.6.1',
        '--bench',
        speed,
        '--bench',
        fidelity,
      ],
      GUEST,
    );
    expect([made.status, made.stderr]).toEqual([0, '']);
    const report = path.join(dir, 'report.json');
    writeFileSync(report, made.stdout);
    expect(JSON.parse(made.stdout).bench.map((b: { mode: string }) => b.mode)).toEqual(['speed', 'fidelity']);

    const json = runCli(['matrix', '--json', report]);
    expect(json.status).toBe(0);
    const matrix = JSON.parse(json.stdout);
    expect(matrix.rows.map((r: { bench: unknown }) => r.bench)).toEqual([
      {
        speed: [
          { profile: 'host-family', test: 'pp512', speedup: 2, reports: 1, builds: ['b7010 (abc1234)'] },
          { profile: 'host-family', test: 'tg128', speedup: 2, reports: 1, builds: ['b7010 (abc1234)'] },
        ],
        fidelity: [{ profile: 'host-family', verdict: 'within-tolerance', meanKld: 0, reports: 1 }],
        greedy: [],
      },
    ]);
    const md = runCli(['matrix', report]);
    const [header, , row] = md.stdout.split('\n');
    expect(header!.split(' | ').slice(-2)).toEqual(['Speed-up (bench)', 'Fidelity (bench) |']);
    expect(row!.split(' | ').slice(-2)).toEqual([
      'host-family: pp512 2.00x (b7010), tg128 2.00x (b7010)',
      'host-family: within (KLD ≤ 0.000000) |',
    ]);
    // The JSON read back prints the same table.
    expect(matrixMarkdown(matrix)).toBe(md.stdout.trimEnd());

    const svgFile = path.join(dir, 'speedups.svg');
    const drawn = runCli(['matrix', '--svg', svgFile, report]);
    expect([drawn.status, drawn.stderr]).toEqual([0, '']);
    const svg = readFileSync(svgFile, 'utf8');
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.match(/<rect x="430"[^>]*>/g)).toHaveLength(2);
    expect(svg).toContain('M1 Ultra, macOS 26.6.1 · macOS 26.5.2 (VirtualMac2,1) — host-family pp512');
    expect(svg).toContain('>2.00x (b7010)<');
  });

  it('a file that is no bench result is a usage error naming it, before anything runs', () => {
    const wrong = path.join(dir, 'not-bench.json');
    writeFileSync(wrong, '{"schema": "metal-cap-shim/report@1"}');
    const r = runCli(['report', '--no-doctor', '--bench', wrong], GUEST);
    expect(r.status).toBe(2);
    expect(r.stderr.split('\n')[0]).toMatch(
      /^metal-cap-shim: ERR_INVALID_REPORT: .*not-bench\.json is not a usable bench result/,
    );
  });
});
