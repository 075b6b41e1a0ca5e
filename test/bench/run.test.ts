// `bench` end to end through the CLI over the simulated Metal (lib/bench/run.ts, lib/cli/bench.ts): the orchestration,
// the interleaved rounds, the statistics and the verdicts, with small scripts standing in for llama-bench and
// llama-perplexity (the real tools run in test/bench/run.real-tools.test.ts). A script sees whether the shim was injected
// (LD_PRELOAD, as the injector is preloaded on Linux) and answers accordingly, so a speed-up or a divergence is the
// injection's doing.
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { jsonDepth } from '../../lib/core/jsonfile.js';
import { spawn } from 'node:child_process';
import { MATRIX_MARKERS, matrixMarkdown } from '../../lib/audit/field-report.js';
import { keyText } from '../../lib/bench/rows.js';
import { buildConsumer, cli, describeSim, requireSimBuild, runCli } from '../support/helpers.js';

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
echo '[{"build_commit":"abc1234","build_number":7010,"backends":"CPU","model_filename":"tiny.gguf","model_type":"llama ?B F32","n_prompt":512,"n_gen":0,"avg_ts":'$ts',"stddev_ts":'$((ts / 100))'},{"build_number":7010,"build_commit":"abc1234","backends":"CPU","n_prompt":0,"n_gen":128,"avg_ts":'$((ts / 10))',"stddev_ts":0.'$((ts / 100))'}]'`,
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
    // The tool's folders stay on this machine unless asked (--keep-paths).
    expect(result.command).toEqual(['llama-bench', '-m', 'tiny.gguf', '-o', 'json']);
    const kept = JSON.parse(
      bench(['--rounds', '1', '--keep-paths', '--json', '--', FAKE_BENCH, '-m', '/m/tiny.gguf']).stdout,
    );
    expect(kept.command).toEqual([FAKE_BENCH, '-m', '/m/tiny.gguf', '-o', 'json']);
    const side = (ts: number) => ({ ts, samples: [ts, ts, ts], rounds: [1, 2, 3], stddevTs: ts / 100 });
    expect(result.speed).toEqual(
      ['pp512', 'tg128'].map((test, i) => ({
        key:
          i === 0
            ? { model_filename: 'tiny.gguf', model_type: 'llama ?B F32', n_prompt: 512, n_gen: 0 }
            : { n_prompt: 0, n_gen: 128 },
        // The model and its type differ between the two records: the label says so.
        label: i === 0 ? 'pp512 model=tiny.gguf type=llama ?B F32' : 'tg128 model=none type=none',
        test,
        model: i === 0 ? 'tiny.gguf' : null,
        modelType: i === 0 ? 'llama ?B F32' : null,
        build: 'b7010 (abc1234)',
        backend: 'CPU',
        stock: side([100, 10][i]!),
        profiles: ['host-family', 'apple7'].map((name) => ({
          name,
          ...side([200, 20][i]!),
          ratios: [2, 2, 2],
          speedup: { centre: 2, low: 2, high: 2, rounds: 3, verdict: 'faster' },
        })),
      })),
    );
    expect([result.schema, result.mode, result.rounds, result.partial, result.failure, result.fidelity]).toEqual([
      'metal-cap-shim/bench@2',
      'speed',
      3,
      false,
      null,
      null,
    ]);
    expect([result.stop, result.provenance, result.interval, result.validity]).toEqual([
      { reason: 'rounds', detail: '3 rounds, as asked', signal: null },
      'simulated',
      { method: 'paired t interval on log ratios', confidence: 0.95 },
      { valid: true, reason: null, affected: false, backends: ['CPU'] },
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

  it('speed, as a table: the first line says what the result is worth; one row per test with its 95 % interval', () => {
    const r = bench(['--rounds', '2', '--', FAKE_BENCH]);
    expect(r.status).toBe(0);
    expect(r.stdout.split('\n')[0]).toBe(
      'metal-cap-shim bench: the tool ran on CPU, which no profile can change: any speed-up is noise; simulated Metal (Linux test build: no GPU ran, so the numbers say nothing about a Mac); 2 rounds, as asked',
    );
    expect(r.stdout.split('\n').filter((l) => l.startsWith('|'))).toEqual([
      '| test | stock t/s | host-family t/s | host-family speed-up [95 % interval] | host-family |',
      '|---|---|---|---|---|',
      '| pp512 model=tiny.gguf type=llama ?B F32 | 100.00 ± 1.00 | 200.00 ± 2.00 | 2.00x [2.00x, 2.00x] | faster |',
      '| tg128 model=none type=none | 10.00 ± 0.10 | 20.00 ± 0.20 | 2.00x [2.00x, 2.00x] | faster |',
    ]);
    const one = bench(['--rounds', '1', '--', FAKE_BENCH]);
    expect(one.stdout).toContain('| 100.00 ± 1.00 | 200.00 ± 2.00 | 2.00x (no interval) | no interval (one round) |');
  });

  it('a record nested 200 000 levels deep is no crash: the result keeps flat values only, and --json prints', () => {
    const deep = path.join(dir, 'deep-bench');
    writeFileSync(
      deep,
      `#!${process.execPath}
const nested = '['.repeat(200000) + ']'.repeat(200000);
console.log('[{"backends":"CPU","n_prompt":512,"n_gen":0,"avg_ts":100,"extra":' + nested + '}]');
`,
    );
    chmodSync(deep, 0o755);
    const r = bench(['--rounds', '2', '--json', '--', deep]);
    expect([r.status, r.stderr]).toEqual([0, '']);
    const result = JSON.parse(r.stdout);
    expect(result.records[0].records).toEqual([{ backends: 'CPU', n_prompt: 512, n_gen: 0, avg_ts: 100 }]);
    expect(result.speed.map((row: { label: string }) => row.label)).toEqual(['pp512']);
  });

  it('an unusable TMPDIR is a typed error saying what to do, before anything runs', () => {
    writeFileSync(LOG, '');
    const r = bench(['--rounds', '1', '--', FAKE_BENCH], { TMPDIR: path.join(dir, 'no-such-folder') });
    expect([r.status, r.stderr.split('\n')[0]]).toEqual([
      2,
      `metal-cap-shim: ERR_FILE: bench cannot make its private folder in ${path.join(dir, 'no-such-folder')} (ENOENT): set TMPDIR to a folder of yours with free space`,
    ]);
    expect(readFileSync(LOG, 'utf8')).toBe('');
  });

  it('a stand-in tool with seeded noise around a known speed-up, 1000 rows: a true 1.0x is called a difference in at most 7 %, a true 1.5x found in nearly all', () => {
    // 1000 tests a run (n_prompt 1 to 1000), each t/s 100 × the true speed-up on the patched side × its own noise
    // (log-normal, sd 0.05), seeded by the run's number, so every run differs and the test repeats exactly.
    const count = path.join(dir, 'seeded.count');
    const tool = path.join(dir, 'seeded-bench');
    writeFileSync(
      tool,
      `#!${process.execPath}
const fs = require('node:fs');
const n = Number(fs.existsSync(${JSON.stringify(count)}) ? fs.readFileSync(${JSON.stringify(count)}, 'utf8') : 0) + 1;
fs.writeFileSync(${JSON.stringify(count)}, String(n));
let a = n * 2654435761 >>> 0;
const u = () => { a = (a + 0x6d2b79f5) >>> 0; let t = a; t = Math.imul(t ^ (t >>> 15), t | 1); t ^= t + Math.imul(t ^ (t >>> 7), t | 61); return ((t ^ (t >>> 14)) >>> 0) / 4294967296; };
const z = () => Math.sqrt(-2 * Math.log(1 - u())) * Math.cos(2 * Math.PI * u());
const k = process.env.LD_PRELOAD ? Number(process.env.TRUTH) : 1;
console.log(JSON.stringify(Array.from({ length: 1000 }, (_, i) => ({ backends: 'CPU', n_prompt: i + 1, n_gen: 0, avg_ts: 100 * k * Math.exp(0.05 * z()) }))));
`,
    );
    chmodSync(tool, 0o755);
    const verdicts = (truth: string) => {
      writeFileSync(count, '0');
      const r = runCli(['bench', '--rounds', '5', '--json', '--', tool], { ...GUEST, TRUTH: truth }, undefined, {
        maxBuffer: 64 * 1024 * 1024,
      });
      expect(r.status, r.stderr).toBe(0);
      const rows = JSON.parse(r.stdout).speed as { profiles: { speedup: { verdict: string } }[] }[];
      expect(rows).toHaveLength(1000);
      return rows.map((row) => row.profiles[0]!.speedup.verdict);
    };
    const same = verdicts('1.0');
    const called = same.filter((v) => v !== 'no-difference-shown').length;
    expect([called <= 70, called > 0]).toEqual([true, true]);
    const faster = verdicts('1.5').filter((v) => v === 'faster').length;
    expect(faster).toBeGreaterThanOrEqual(990);
  }, 120_000);

  it('a sweep gives one row per combination: -fa 0,1 and two models never share a row, each with its own numbers', () => {
    // Four records per run (two models × flash attention off and on), each with its own t/s; the shim doubles them.
    const sweep = script(
      'sweep-bench',
      `k=1; [ -n "$LD_PRELOAD" ] && k=2
rec() { echo '{"backends":"CPU","model_filename":"/m/'$1'","n_threads":4,"flash_attn":'$2',"n_prompt":512,"n_gen":0,"avg_ts":'$(( $3 * k ))'}'; }
echo "[$(rec a.gguf 0 100),$(rec a.gguf 1 150),$(rec b.gguf 0 300),$(rec b.gguf 1 450)]"`,
    );
    const result = JSON.parse(bench(['--rounds', '2', '--json', '--', sweep]).stdout);
    expect(
      result.speed.map((row: { label: string; stock: { ts: number }; profiles: { ts: number }[] }) => [
        row.label,
        row.stock.ts,
        row.profiles[0]!.ts,
      ]),
    ).toEqual([
      ['pp512 model=a.gguf fa=0', 100, 200],
      ['pp512 model=a.gguf fa=1', 150, 300],
      ['pp512 model=b.gguf fa=0', 300, 600],
      ['pp512 model=b.gguf fa=1', 450, 900],
    ]);
  });

  it('--precision: more rounds until every interval is that narrow, or a cap; the result says which', () => {
    // Noise-free ratios: precise as soon as there are two rounds.
    const precise = JSON.parse(bench(['--rounds', '2', '--precision', '2%', '--json', '--', FAKE_BENCH]).stdout);
    expect([precise.rounds, precise.stop]).toEqual([
      2,
      { reason: 'precision', detail: 'every interval within ±2 % after 2 rounds', signal: null },
    ]);
    // Ratios of 2, 3, 2, 3 …: never within ±1 %, so the cap ends it.
    const noisy = script(
      'noisy-bench',
      `n=$(cat ${JSON.stringify(path.join(dir, 'noisy.count'))} 2>/dev/null || echo 0); echo $((n + 1)) > ${JSON.stringify(path.join(dir, 'noisy.count'))}
ts=100; [ -n "$LD_PRELOAD" ] && ts=$((200 + (n % 4) * 50))
echo '[{"backends":"CPU","n_prompt":512,"n_gen":0,"avg_ts":'$ts'}]'`,
    );
    const capped = JSON.parse(
      bench(['--rounds', '2', '--precision', '1', '--max-rounds', '4', '--json', '--', noisy]).stdout,
    );
    expect([capped.rounds, capped.stop.reason, capped.stop.detail, capped.partial]).toEqual([
      4,
      'max-rounds',
      '4 rounds, the most allowed, before every interval was within ±1 %',
      false,
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
      'llama-perplexity',
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

  it('a run that fails ends the rounds: the finished rounds are kept, the failed run named with its side and round', () => {
    const count = path.join(dir, 'fails.count');
    writeFileSync(count, '0');
    // Runs 1 to 4 (rounds 1 and 2) succeed; the fifth, round 3's first (stock, the order having turned back), fails.
    const failing = script(
      'failing-bench',
      `n=$(($(cat ${JSON.stringify(count)}) + 1)); echo $n > ${JSON.stringify(count)}
[ $n -ge 5 ] && { echo "error: failed to load model" >&2; exit 3; }
ts=100; [ -n "$LD_PRELOAD" ] && ts=150
echo '[{"backends":"CPU","n_prompt":512,"n_gen":0,"avg_ts":'$ts'}]'`,
    );
    const r = bench(['--rounds', '3', '--json', '--', failing, '-m', 'missing.gguf']);
    expect(r.status).toBe(1);
    expect(r.stderr).toBe(
      `metal-cap-shim: ERR_BENCH_TOOL: ${failing} (stock) exited with code 3; its last words: error: failed to load model (round 3); rounds 1 to 2 are kept\n`,
    );
    const result = JSON.parse(r.stdout);
    expect([result.rounds, result.partial, result.stop.reason, result.failure]).toEqual([
      2,
      true,
      'failed',
      {
        side: 'stock',
        round: 3,
        exitCode: 3,
        signal: null,
        code: 'ERR_BENCH_TOOL',
        message: `${failing} (stock) exited with code 3; its last words: error: failed to load model`,
      },
    ]);
    expect(result.speed[0].profiles[0].ratios).toEqual([1.5, 1.5]);
    // The human output says it too, and the first line says it is partial.
    writeFileSync(count, '0');
    const text = bench(['--rounds', '3', '--', failing]);
    expect(text.stdout.split('\n')[0]).toMatch(
      /^metal-cap-shim bench: PARTIAL: .* \(round 3\); rounds 1 to 2 are kept; /,
    );
    expect(text.stdout).toContain('Failed run: stock, round 3 (exit 3): ');
  });

  it('a tool that prints more than 64 MiB is stopped while it prints: the run failed, the rounds before it kept', () => {
    const count = path.join(dir, 'floods.count');
    writeFileSync(count, '0');
    // Round 1 succeeds; the third run (round 2's first) prints 100 MB, which bench reads through a counting pipe.
    const flooding = script(
      'flooding-bench',
      `n=$(($(cat ${JSON.stringify(count)}) + 1)); echo $n > ${JSON.stringify(count)}
[ $n -ge 3 ] && { head -c 100000000 /dev/zero; exit 0; }
ts=100; [ -n "$LD_PRELOAD" ] && ts=150
echo '[{"backends":"CPU","n_prompt":512,"n_gen":0,"avg_ts":'$ts'}]'`,
    );
    const r = bench(['--rounds', '2', '--json', '--', flooding]);
    const result = JSON.parse(r.stdout);
    const message = `${flooding} (host-family): the tool printed more than 67108864 bytes on its stdout and was stopped there`;
    expect([r.status, r.stderr]).toEqual([
      1,
      `metal-cap-shim: ERR_BENCH_OUTPUT: ${message} (round 2); rounds 1 to 1 are kept\n`,
    ]);
    expect([result.rounds, result.partial, result.stop.reason, result.failure]).toEqual([
      1,
      true,
      'failed',
      { side: 'host-family', round: 2, exitCode: null, signal: 'SIGKILL', code: 'ERR_BENCH_OUTPUT', message },
    ]);
    expect(result.speed[0].profiles[0].ratios).toEqual([1.5]);
  });

  it('a patched side that was not patched makes the result no comparison: refused, exit 1, the run named', () => {
    // The tool says it ran on Metal but created no device: nothing was patched, so its "patched" side is stock.
    const unpatched = script('metal-bench', `echo '[{"backends":"Metal,BLAS","n_prompt":512,"n_gen":0,"avg_ts":100}]'`);
    const r = bench(['--json', '--', unpatched]);
    expect(r.status).toBe(1);
    expect(r.stderr).toBe(
      'metal-cap-shim: ERR_BENCH_NOT_PATCHED: host-family, round 1: the tool used Metal but the shim patched no device class (round 1); no round finished\n',
    );
    const result = JSON.parse(r.stdout);
    expect([result.stop.reason, result.failure.code, result.rounds]).toEqual([
      'not-patched',
      'ERR_BENCH_NOT_PATCHED',
      0,
    ]);
    // report refuses such a result.
    const file = path.join(dir, 'unpatched.json');
    writeFileSync(file, r.stdout);
    const attached = runCli(['report', '--no-doctor', '--bench', file], GUEST);
    expect(attached.status).toBe(2);
    expect(attached.stderr).toMatch(
      /^metal-cap-shim: ERR_INVALID_REPORT: .*unpatched\.json is not a usable bench result/,
    );
  });

  it('a tool that uses Metal and is patched is a valid, affected comparison', () => {
    // The stand-in starts a real Metal program first (the simulated device), so the shim patches a class.
    const metal = script(
      'patched-metal-bench',
      `${JSON.stringify(buildConsumer())} > /dev/null
ts=100; [ -n "$LD_PRELOAD" ] && ts=300
echo '[{"backends":"Metal,BLAS","n_prompt":512,"n_gen":0,"avg_ts":'$ts'}]'`,
    );
    const r = bench(['--rounds', '2', '--json', '--', metal]);
    expect([r.status, r.stderr]).toEqual([0, '']);
    const result = JSON.parse(r.stdout);
    expect(result.validity).toEqual({ valid: true, reason: null, affected: true, backends: ['Metal,BLAS'] });
    expect(result.runs.map((x: { patchedClasses: string[] }) => x.patchedClasses)).toEqual([
      [],
      ['AppleParavirtDevice'],
      ['AppleParavirtDevice'],
      [],
    ]);
    expect(result.speed[0].profiles[0].speedup).toEqual({ centre: 3, low: 3, high: 3, rounds: 2, verdict: 'faster' });
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

describeSim('signals: Ctrl-C, SIGTERM and SIGHUP stop cleanly, with what was measured', () => {
  beforeAll(requireSimBuild);

  // Each run prints its record at once, then the patched one waits: the first run ends, the second is stopped.
  const slow = () =>
    script(
      'slow-bench',
      `echo '[{"backends":"CPU","n_prompt":512,"n_gen":0,"avg_ts":100}]'; [ -n "$LD_PRELOAD" ] && exec sleep 30; exit 0`,
    );

  async function stopWith(signal: NodeJS.Signals): Promise<{ status: number | null; result: Record<string, any> }> {
    const child = spawn(process.execPath, [cli, 'bench', '--json', '--rounds', '2', '--', slow()], {
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
    child.kill(signal);
    const status = await new Promise<number | null>((done) => child.on('close', (code) => done(code)));
    return { status, result: JSON.parse(stdout) };
  }

  it.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
    ['SIGHUP', 129],
  ] as const)(
    '%s stops the tool, prints what was measured so far (partial), and exits %i',
    async (signal, code) => {
      const { status, result } = await stopWith(signal);
      expect([status, result.partial, result.stop.reason, result.stop.signal, result.failure]).toEqual([
        code,
        true,
        'interrupted',
        signal,
        null,
      ]);
      expect([result.runs.map((r: { side: string }) => r.side), result.runs[1].signal, result.rounds]).toEqual([
        ['stock', 'host-family'],
        signal,
        0,
      ]);
      // No complete round: a row with stock's run alone, no speed-up.
      expect(result.speed.map((r: { test: string; stock: { ts: number | null } }) => [r.test, r.stock.ts])).toEqual([]);
    },
    40_000,
  );
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
    expect(said(['--fidelity', '--precision', '2%'])).toEqual([
      2,
      'metal-cap-shim: ERR_USAGE: --precision is for speed: --fidelity compares one run of each profile with stock',
    ]);
    for (const bad of ['0', '0%', '50.5', 'x', '-2%'])
      expect(said(['--precision', bad])).toEqual([
        2,
        `metal-cap-shim: ERR_USAGE: --precision takes a percentage above 0 and at most 50 (such as 2%), not '${bad}'`,
      ]);
    expect(said(['--max-rounds', '10'])).toEqual([
      2,
      "metal-cap-shim: ERR_USAGE: --max-rounds caps --precision's adaptive rounds: give --precision too, or use --rounds alone",
    ]);
    expect(said(['--precision', '2', '--rounds', '8', '--max-rounds', '5'])).toEqual([
      2,
      'metal-cap-shim: ERR_USAGE: --max-rounds 5 is below --rounds 8: the cap cannot be under the rounds always run',
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
    const entry = (test: string, key: string) => ({
      profile: 'host-family',
      test,
      key,
      speedup: 2,
      low: 2,
      high: 2,
      verdict: 'faster',
      rounds: 2,
      reports: 1,
      builds: ['b7010 (abc1234)'],
      provenance: 'simulated',
      partial: 0,
      affected: false,
    });
    expect(matrix.rows.map((r: { bench: unknown }) => r.bench)).toEqual([
      {
        speed: [
          entry(
            'pp512 model=tiny.gguf type=llama ?B F32',
            keyText({ model_filename: 'tiny.gguf', model_type: 'llama ?B F32', n_prompt: 512, n_gen: 0 }),
          ),
          entry('tg128 model=none type=none', keyText({ n_prompt: 0, n_gen: 128 })),
        ],
        fidelity: [{ profile: 'host-family', verdict: 'within-tolerance', meanKld: 0, reports: 1 }],
        greedy: [],
      },
    ]);
    // The report's own audit ran over the simulated Metal: its cell says so, never a plain "verified".
    expect(matrix.rows[0].cells['host-family']).toMatchObject({ reports: 1, verified: 1, simulated: 1 });
    const md = runCli(['matrix', report]);
    const lines = md.stdout.split('\n');
    const [header, , row] = lines;
    expect(header!.split(' | ').slice(-2)).toEqual(['Speed-up (bench)', 'Fidelity (bench) |']);
    expect(row!.split(' | ').slice(-2)).toEqual([
      'host-family: pp512 model=tiny.gguf type=llama ?B F32 2.00x \\[2.00x, 2.00x\\] faster (b7010) \\[simulated, CPU\\], tg128 model=none type=none 2.00x \\[2.00x, 2.00x\\] faster (b7010) \\[simulated, CPU\\]',
      'host-family: within (KLD ≤ 0.000000) |',
    ]);
    expect(row).toContain('✓ verified 1/1 \\[simulated\\]');
    // The legend says what each marker means.
    expect(lines.slice(lines.indexOf('') + 1)).toEqual([
      'Where the evidence comes from: unmarked is measured on macOS; speed-ups are geometric means with their 95 % interval (paired t on log ratios).',
      `- simulated: ${MATRIX_MARKERS.simulated}`,
      `- CPU: ${MATRIX_MARKERS.CPU}`,
      '',
    ]);
    // The JSON read back prints the same table.
    expect(matrixMarkdown(matrix)).toBe(md.stdout.trimEnd());

    const svgFile = path.join(dir, 'speedups.svg');
    const drawn = runCli(['matrix', '--svg', svgFile, report]);
    expect([drawn.status, drawn.stderr]).toEqual([0, '']);
    const svg = readFileSync(svgFile, 'utf8');
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    // Two green bars (faster: each interval is above 1x), one a test.
    expect(
      svg
        .split('<g id="plot">')[1]!
        .split('</g>')[0]!
        .match(/<rect [^>]*fill="#2e7d32"\/>/g),
    ).toHaveLength(2);
    expect(svg).toContain('<title>M1 Ultra, macOS 26.6.1 · macOS 26.5.2 (VirtualMac2,1)</title>');
    expect(svg).toContain('<title>host-family · pp512 model=tiny.gguf type=llama ?B F32</title>');
    expect(svg).toContain('<title>2.00x (2.00x–2.00x) simulated, CPU · b7010</title>');
  });

  it('report --json writes only what matrix reads back: a report of 16 MiB is written and read, one byte more refused', () => {
    const speed = JSON.parse(bench(['--rounds', '1', '--json', '--', FAKE_BENCH]).stdout);
    // A longer command line grows the report by exactly as many bytes: the bench file sets the report's size.
    const reportOf = (extra: number) => {
      const file = path.join(dir, `padded-${extra}.json`);
      writeFileSync(file, JSON.stringify({ ...speed, command: [`${speed.command[0]}${'a'.repeat(extra)}`] }));
      return runCli(['report', '--json', '--no-doctor', '--bench', file], GUEST, undefined, {
        maxBuffer: 64 * 1024 * 1024,
      });
    };
    const small = reportOf(0);
    expect(small.status).toBe(0);
    const room = 16 * 1024 * 1024 - Buffer.byteLength(small.stdout);
    const fits = reportOf(room);
    expect([fits.status, fits.stderr, Buffer.byteLength(fits.stdout)]).toEqual([0, '', 16 * 1024 * 1024]);
    const report = path.join(dir, 'largest-report.json');
    writeFileSync(report, fits.stdout);
    expect(runCli(['matrix', '--json', report]).status).toBe(0);
    const over = reportOf(room + 1);
    const message = `the report would be ${16 * 1024 * 1024 + 1} bytes, more than the ${16 * 1024 * 1024} that matrix reads back: attach fewer --bench files, or results of fewer rounds`;
    expect([over.status, JSON.parse(over.stdout), over.stderr]).toEqual([
      2,
      { error: { code: 'ERR_FILE', message } },
      `metal-cap-shim: ERR_FILE: ${message}\n`,
    ]);
  });

  it('report --json writes only what matrix reads back: a report nested 64 levels is written and read, 65 refused', () => {
    const speed = JSON.parse(bench(['--rounds', '1', '--json', '--', FAKE_BENCH]).stdout);
    // A record's extra field, `levels` objects deep, starts at level 8 of the report (bench[0].records[0].records[0].deep).
    const reportOf = (levels: number) => {
      let deep: Record<string, unknown> = {};
      for (let i = 1; i < levels; i++) deep = { a: deep };
      const [first, ...rest] = speed.records;
      const records = [{ ...first, records: [{ ...first.records[0], deep }, ...first.records.slice(1)] }, ...rest];
      const file = path.join(dir, `nested-bench-${levels}.json`);
      writeFileSync(file, JSON.stringify({ ...speed, records }));
      return runCli(['report', '--json', '--no-doctor', '--bench', file], GUEST);
    };
    const fits = reportOf(57);
    expect([fits.status, fits.stderr, jsonDepth(fits.stdout)]).toEqual([0, '', 64]);
    const report = path.join(dir, 'deepest-report.json');
    writeFileSync(report, fits.stdout);
    expect(runCli(['matrix', '--json', report]).status).toBe(0);
    const over = reportOf(58);
    expect([over.status, over.stderr]).toEqual([
      2,
      'metal-cap-shim: ERR_FILE: the report would nest more than the 64 levels that matrix reads back: attach bench results as `bench --json` wrote them\n',
    ]);
  });

  it('a bench result measured on another host is refused by report and by matrix, the difference named', () => {
    const speed = JSON.parse(bench(['--rounds', '2', '--json', '--', FAKE_BENCH]).stdout);
    const foreign = path.join(dir, 'foreign.json');
    writeFileSync(foreign, JSON.stringify({ ...speed, host: { ...speed.host, cpuBrand: 'Apple M4 Max (Virtual)' } }));
    const r = runCli(['report', '--no-doctor', '--bench', foreign], GUEST);
    expect(r.status).toBe(2);
    expect(r.stderr.split('\n')[0]).toBe(
      `metal-cap-shim: ERR_INVALID_REPORT: bench result 1 was measured on another host than the report's (cpuBrand: "Apple M4 Max (Virtual)" (bench) vs ${JSON.stringify(speed.host.cpuBrand)} (report)): attach a bench result to a report made on the machine that measured it`,
    );
    // A snapshot's report is another host too (no cpuBrand of this machine's there): offline rows show no borrowed speed-ups.
    const offline = runCli(['report', '--no-doctor', '--snapshot', 'm1-ultra-bare-metal', '--bench', foreign], GUEST);
    expect(offline.status).toBe(2);
    // A report edited to carry it is refused by matrix.
    const made = JSON.parse(runCli(['report', '--json', '--no-doctor'], GUEST).stdout);
    const edited = path.join(dir, 'edited-report.json');
    writeFileSync(
      edited,
      JSON.stringify({ ...made, bench: [{ ...speed, host: { ...speed.host, osBuild: '99Z99' } }] }),
    );
    const m = runCli(['matrix', edited]);
    expect(m.status).toBe(2);
    expect(m.stderr).toContain('was measured on another host than the report');
  });

  it('a partial result attaches, and the matrix marks it partial', () => {
    const speed = JSON.parse(bench(['--rounds', '2', '--json', '--', FAKE_BENCH]).stdout);
    const partial = path.join(dir, 'partial.json');
    writeFileSync(
      partial,
      JSON.stringify({
        ...speed,
        partial: true,
        stop: { reason: 'interrupted', detail: 'stopped by SIGINT', signal: 'SIGINT' },
      }),
    );
    const made = runCli(['report', '--json', '--no-doctor', '--bench', partial], GUEST);
    expect([made.status, made.stderr]).toEqual([0, '']);
    const file = path.join(dir, 'partial-report.json');
    writeFileSync(file, made.stdout);
    const md = runCli(['matrix', file]).stdout;
    expect(md).toContain('faster (b7010) \\[simulated, partial, CPU\\]');
    expect(md).toContain(`- partial: ${MATRIX_MARKERS.partial}`);
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
