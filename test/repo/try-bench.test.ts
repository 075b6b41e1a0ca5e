// scripts/build/try-bench.mjs (`npm run try-bench`): bench tried here in one command, as docs/bench.md says. Its
// arguments, its plan (every step with its time and disk, said before anything runs), and one real run over the
// simulated Metal (node-llama-cpp's Linux CPU prebuilt, one round): every step said as it starts, in order, and the
// output kept where the last line says.
import { execFile, spawn } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { nodeLlamaCppProject, PrebuiltUnavailable } from '../../scripts/build/node-llama-cpp-prebuilt.mjs';
import { parseArgs, planLines, plannedSteps, STEP_COSTS } from '../../scripts/build/try-bench.mjs';
import { root } from '../support/helpers.js';

const run = promisify(execFile);
const script = path.join(root, 'scripts', 'build', 'try-bench.mjs');

describe('its arguments', () => {
  it('defaults, --tools, --rounds N within 1 to 100, --help', () => {
    expect(parseArgs([])).toEqual({ options: { tools: false, rounds: 3, help: false } });
    expect(parseArgs(['--tools', '--rounds', '1'])).toEqual({ options: { tools: true, rounds: 1, help: false } });
    expect(parseArgs(['--rounds', '100', '-h'])).toEqual({ options: { tools: false, rounds: 100, help: true } });
    const rounds = { error: '--rounds takes a whole number from 1 to 100' };
    for (const bad of [['--rounds', '0'], ['--rounds', '101'], ['--rounds', '2.5'], ['--rounds', 'x'], ['--rounds']])
      expect(parseArgs(bad)).toEqual(rounds);
    expect(parseArgs(['--tool'])).toEqual({
      error: 'unknown argument --tool: try-bench takes --tools, --rounds N and --help',
    });
  });

  it('a wrong argument: one line on stderr and exit 2, before anything runs', async () => {
    const failed = await run(process.execPath, [script, '--rounds', '0']).catch((e) => e);
    expect([failed.code, failed.stdout, failed.stderr]).toEqual([
      2,
      '',
      'try-bench: --rounds takes a whole number from 1 to 100\n',
    ]);
    const { stdout } = await run(process.execPath, [script, '--help']);
    expect(stdout.split('\n')[0]).toBe('Usage: npm run try-bench [-- [--tools] [--rounds N]]');
  });
});

describe('its plan', () => {
  it('four steps, seven with --tools, each with its time the first time and after, and its disk', () => {
    expect(plannedSteps({ tools: false }).map((s) => s.name)).toEqual(['sim', 'project', 'model', 'benchNlc']);
    const all = plannedSteps({ tools: true });
    expect(all.map((s) => s.name)).toEqual([
      'sim',
      'project',
      'model',
      'benchNlc',
      'tools',
      'benchSpeed',
      'benchFidelity',
    ]);
    expect(all.find((s) => s.name === 'tools')).toEqual({
      name: 'tools',
      what: 'llama-bench and llama-perplexity for the CPU (llama-tools.mjs)',
      cold: '12–21 min',
      warm: 'at once',
      disk: '260 MB temporary, 22 MB in the cache',
    });
    const lines = planLines(all);
    expect(lines).toHaveLength(7);
    expect(lines[0]).toBe(
      `  1. ${'the simulated Metal and dist/ (npm run sim)'.padEnd(all[1]!.what.length)}  2–3 min the first time, 2 s after; 12 MB in dist/ and build/`,
    );
    for (const [i, s] of all.entries())
      expect(lines[i]).toBe(
        `  ${i + 1}. ${s.what.padEnd(all[1]!.what.length)}  ${s.cold} the first time, ${s.warm} after; ${s.disk}`,
      );
    expect(Object.keys(STEP_COSTS).sort()).toEqual(all.map((s) => s.name).sort());
  });
});

/** Why the node-llama-cpp project cannot be had here, or null. */
let skipReason: string | null = null;
try {
  await nodeLlamaCppProject();
} catch (err) {
  if (!(err instanceof PrebuiltUnavailable)) throw err;
  skipReason = `node-llama-cpp's prebuilt cannot be had here: ${err.message}`;
}

describe.skipIf(skipReason !== null)('a run', () => {
  it('says the plan, then every step as it starts, runs bench over the simulation and names the outputs', async () => {
    const { stdout } = await run(process.execPath, [script, '--rounds', '1'], { cwd: root, maxBuffer: 16 << 20 });
    const said = stdout.split('\n').filter((l) => l.startsWith('try-bench: '));
    const out = /^try-bench: done in \S+; the outputs are in (\S+)$/.exec(said.at(-1) ?? '')?.[1];
    try {
      expect(said.map((l) => l.replace(/\(\d+(m\d\d)?s\)$/, '(T)').replace(out ?? '\0', 'OUT'))).toEqual([
        'try-bench: 4 steps, each said as it starts (measured on a shared 2-core Linux machine, 2026-12-06):',
        'try-bench: [1/4] the simulated Metal and dist/ (npm run sim) (T)',
        'try-bench: [2/4] node-llama-cpp with its Linux CPU prebuilt (node-llama-cpp-prebuilt.mjs) (T)',
        'try-bench: [3/4] a tiny model (tiny-gguf.mjs): OUT/tiny.gguf (T)',
        'try-bench: [4/4] bench --node-llama-cpp over vz-guest-m1-ultra-tahoe-stock, 30–50 s (output also in node-llama-cpp.txt) (T)',
        expect.stringMatching(/^try-bench: done in \d+(m\d\d)?s; the outputs are in OUT$/),
      ]);
      expect(path.dirname(out!)).toBe(path.join(root, 'build', 'try-bench'));
      expect(readdirSync(out!).sort()).toEqual(['node-llama-cpp.txt', 'tiny.gguf']);
      const output = readFileSync(path.join(out!, 'node-llama-cpp.txt'), 'utf8');
      // What bench printed is what was kept, and it ran over the simulation with one round.
      expect(stdout).toContain(output);
      expect(output.split('\n')[0]).toMatch(/^metal-cap-shim bench: .*simulated Metal.*; 1 round, as asked$/);
      expect(output).toContain('| host-family | all 32 the same | – | – |');
    } finally {
      if (out !== undefined) rmSync(out, { recursive: true, force: true });
    }
  }, 300_000);
});

describe.skipIf(skipReason !== null)('a run stopped by SIGTERM', () => {
  it('passes it on to bench, which keeps what it measured, and exits 143 with no step after', async () => {
    const tryBench = spawn(process.execPath, [script], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    tryBench.stdout.on('data', (c) => {
      const first = !stdout.includes('[4/4]');
      stdout += c;
      // Once bench has started: its first run takes more than the two seconds given here.
      if (first && stdout.includes('[4/4]')) setTimeout(() => tryBench.kill('SIGTERM'), 2_000);
    });
    const code = await new Promise((resolve) => tryBench.on('close', resolve));
    const out = /\[3\/4\] a tiny model \(tiny-gguf\.mjs\): (\S+)\/tiny\.gguf/.exec(stdout)?.[1];
    try {
      expect(code).toBe(143);
      const said = stdout.split('\n').filter((l) => l.startsWith('try-bench: '));
      expect(said.slice(-2)).toEqual([
        expect.stringMatching(/^try-bench: \[4\/4\] bench --node-llama-cpp /),
        'try-bench: stopped by SIGTERM',
      ]);
      const output = readFileSync(path.join(out!, 'node-llama-cpp.txt'), 'utf8');
      expect(output.split('\n')[0]).toMatch(/^metal-cap-shim bench: PARTIAL: stopped by SIGTERM: /);
    } finally {
      if (out !== undefined) rmSync(out, { recursive: true, force: true });
    }
  }, 300_000);
});

if (skipReason !== null) {
  describe('a run', () => {
    it.skip(skipReason as string, () => {});
  });
}
