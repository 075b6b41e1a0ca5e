// bench's progress line on a terminal (lib/cli/bench.ts): run on a pseudo-terminal with script(1), it shows the round,
// the side running and the time since bench began, each run rewriting the same line, and erases it before the result,
// so what the terminal shows at the end is the result alone. Off a terminal, and with --json, there is no line.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { cli, describeSim, requireSimBuild, runCli } from '../support/helpers.js';

const dir = mkdtempSync(path.join(tmpdir(), 'mcs-bench-tty-'));
const GUEST = { METAL_CAP_SHIM_SIM_SNAPSHOT: 'vz-guest-m1-ultra-tahoe-stock', NO_COLOR: '1' };

/** llama-bench: 0.6 s a run, pp512 at 100 t/s and tg128 at 10 stock, twice that with the shim injected. */
const FAKE_BENCH = path.join(dir, 'llama-bench');
writeFileSync(
  FAKE_BENCH,
  `#!/bin/sh
ts=100; [ -n "$LD_PRELOAD" ] && ts=200
sleep 0.6
echo '[{"build_commit":"abc1234","build_number":7010,"backends":"CPU","model_filename":"tiny.gguf","n_prompt":512,"n_gen":0,"avg_ts":'$ts'},{"backends":"CPU","model_filename":"tiny.gguf","n_prompt":0,"n_gen":128,"avg_ts":'$((ts / 10))'}]'
`,
);
chmodSync(FAKE_BENCH, 0o755);

const ARGS = ['bench', '--rounds', '2', '--profile', 'host-family,apple7', '--', FAKE_BENCH, '-m', 'tiny.gguf'];

/** Runs the CLI on a pseudo-terminal (script(1)): every byte the terminal received, stdout and stderr as written. */
function onTerminal(args: string[]): { status: number | null; bytes: string } {
  const line = [process.execPath, cli, ...args].map((a) => `'${a}'`).join(' ');
  const r = spawnSync('script', ['-qec', line, '/dev/null'], {
    encoding: 'utf8',
    env: { ...process.env, SHELL: '/bin/sh', ...GUEST },
    timeout: 60_000,
  });
  return { status: r.status, bytes: r.stdout };
}

/** What a terminal shows after these bytes: `\r` goes to the line's start, ESC [ K erases to its end, `\n` goes down. */
function screen(bytes: string): string {
  const lines: string[] = [''];
  let col = 0;
  for (let i = 0; i < bytes.length; i++) {
    const row = lines.length - 1;
    if (bytes.startsWith('\x1b[K', i)) {
      lines[row] = lines[row]!.slice(0, col);
      i += 2;
    } else if (bytes[i] === '\r') col = 0;
    else if (bytes[i] === '\n') {
      lines.push('');
      col = 0;
    } else {
      const l = lines[row]!;
      lines[row] = l.slice(0, col) + bytes[i] + l.slice(col + 1);
      col++;
    }
  }
  return lines.join('\n');
}

const FRAME = /^bench: round (\d+)\/(\d+), ([\w-]+) \((\d+)\/(\d+)\) … (\d+) s$/;

describeSim('bench on a terminal', () => {
  beforeAll(requireSimBuild);

  it('one line per run, rewritten in place: round k of n, the side, run i of all, seconds since bench began', () => {
    const r = onTerminal(ARGS);
    expect(r.status).toBe(0);
    const erase = '\r\x1b[K';
    const last = r.bytes.lastIndexOf(erase);
    // Each frame starts by going back and erasing the line; the last erase comes after the last frame.
    const frames = r.bytes.slice(0, last).split(erase).slice(1);
    const parsed = frames.map((f) => FRAME.exec(f));
    expect(parsed.map((m, i) => (m === null ? `not a frame: ${JSON.stringify(frames[i])}` : null))).toEqual(
      frames.map(() => null),
    );
    expect(parsed.map((m) => `${m![1]}/${m![2]} ${m![3]} ${m![4]}/${m![5]}`)).toEqual([
      '1/2 stock 1/6',
      '1/2 host-family 2/6',
      '1/2 apple7 3/6',
      '2/2 host-family 4/6',
      '2/2 apple7 5/6',
      '2/2 stock 6/6',
    ]);
    const seconds = parsed.map((m) => Number(m![6]));
    expect(seconds[0]).toBeGreaterThanOrEqual(0);
    expect(seconds[0]).toBeLessThanOrEqual(1);
    expect(seconds.every((s, i) => i === 0 || s >= seconds[i - 1]!)).toBe(true);
    // Five runs of at least 0.6 s came before the sixth started.
    expect(seconds[5]).toBeGreaterThanOrEqual(3);
    expect(seconds[5]).toBeLessThanOrEqual(50);
    // No frame ends a line: the line is rewritten, never a scrolling log.
    expect(r.bytes.slice(0, last).includes('\n')).toBe(false);
  }, 60_000);

  it('the line is erased before the result: the terminal ends up showing what bench prints off a terminal', () => {
    const tty = onTerminal(ARGS);
    const plain = runCli(ARGS, GUEST);
    expect([tty.status, plain.status, plain.stderr]).toEqual([0, 0, '']);
    expect(plain.stdout).toContain(
      '| pp512 | 100.00 | 200.00 | 2.00x [2.00x, 2.00x] | faster | 200.00 | 2.00x [2.00x, 2.00x] | faster |',
    );
    expect(screen(tty.bytes)).toBe(plain.stdout);
    expect(screen(tty.bytes)).not.toContain('bench: round');
  }, 60_000);

  it('--json on a terminal: no progress line, the JSON alone', () => {
    const r = onTerminal([...ARGS.slice(0, 5), '--json', ...ARGS.slice(5)]);
    expect(r.status).toBe(0);
    expect(r.bytes).not.toContain('bench: round');
    expect(r.bytes).not.toContain('\x1b[K');
    expect(JSON.parse(r.bytes).runs.length).toBe(6);
  }, 60_000);
});

describeSim('bench --node-llama-cpp: its options, checked before anything runs', () => {
  beforeAll(requireSimBuild);

  it.each([
    [['--node-llama-cpp'], '--node-llama-cpp needs --model MODEL (the GGUF file to load)'],
    [
      ['--node-llama-cpp', '--model', 'm.gguf', '--', 'llama-bench'],
      '--node-llama-cpp runs no program: drop `--` and what follows it',
    ],
    [
      ['--node-llama-cpp', '--fidelity', '--model', 'm.gguf'],
      '--fidelity is for llama-perplexity; --node-llama-cpp measures on its own',
    ],
    [
      ['--model', 'm.gguf', '--', 'llama-bench'],
      '--model is for --node-llama-cpp; a llama.cpp tool takes its own options after `--`',
    ],
    [
      ['--threads', '2', '--', 'llama-bench'],
      '--threads is for --node-llama-cpp; a llama.cpp tool takes its own options after `--`',
    ],
    [
      ['--node-llama-cpp', '--model', 'm.gguf', '--prompt-tokens', '0'],
      "--prompt-tokens takes a whole number from 1 to 65536, not '0'",
    ],
    [
      ['--node-llama-cpp', '--model', 'm.gguf', '--gen-tokens', '1.5'],
      "--gen-tokens takes a whole number from 1 to 65536, not '1.5'",
    ],
    [
      ['--node-llama-cpp', '--model', 'm.gguf', '--threads', '0'],
      "--threads takes a whole number from 1 to 1024, not '0'",
    ],
    [['--model', 'm.gguf'], 'bench needs a program after `--`: metal-cap-shim bench [options] -- program [args…]'],
  ])('%j: %s', (args, message) => {
    const r = runCli(['bench', ...args], GUEST);
    expect([r.status, r.stdout, r.stderr.split('\n')[0]]).toEqual([2, '', `metal-cap-shim: ERR_USAGE: ${message}`]);
  });
});

describeSim('bench and a threadgroup claim above every Apple GPU', () => {
  beforeAll(requireSimBuild);

  it('refused before anything runs (exit 3, ERR_ABOVE_HARDWARE); --allow-above-hardware runs it', () => {
    const apple10 = '{"appleFamilyMax": 1010, "maxThreadgroupMemoryLength": 65536}';
    const args = (extra: string[]) => ['bench', '--json', '--rounds', '1', '--profile', apple10, ...extra];
    const refused = runCli([...args([]), '--', FAKE_BENCH, '-m', 'tiny.gguf'], GUEST);
    const error = (JSON.parse(refused.stdout) as { error: { code: string; message: string } }).error;
    expect([refused.status, error.code]).toEqual([3, 'ERR_ABOVE_HARDWARE']);
    expect(error.message).toMatch(/^refusing the profile for llama\.cpp v0\.5\.0 and later \(current rules\)/);
    const allowed = runCli([...args(['--allow-above-hardware']), '--', FAKE_BENCH, '-m', 'tiny.gguf'], GUEST);
    expect(allowed.status, allowed.stderr).toBe(0);
    const out = JSON.parse(allowed.stdout) as { profiles: { profile: { maxThreadgroupMemoryLength: number } }[] };
    expect(out.profiles.map((p) => p.profile.maxThreadgroupMemoryLength)).toEqual([65536]);
  });
});
