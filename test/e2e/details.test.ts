// The CLI details a user meets in the first hour: --json failures as JSON, --version everywhere, `exec` without `--`,
// one-line errors on unusable files, repeated options, matrix counting a report once, plurals, --rules with mlx,
// write errors on stdout, --help naming the bundled snapshots, `exec --allow-unpatched` as a cross-platform wrapper,
// and a tested checkout that still behaves like Linux.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { FieldReport, Matrix } from '../../lib/audit/field-report.js';
import { listSnapshots } from '../../lib/device/snapshots.js';
import { cli, describeSim, requireSimBuild, root, runCli } from '../support/helpers.js';
import { EXIT } from '../../lib/cli/exit.js';

const dir = mkdtempSync(path.join(tmpdir(), 'mcs-details-'));
const STOCK = 'vz-guest-m1-ultra-tahoe-stock';
const NO_SIM = { METAL_CAP_SHIM_SIM_SNAPSHOT: undefined };
const version = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string }).version;
// Every command of lib/cli/main.ts, in the order of its table; the main-help test below fails when the two differ.
const COMMANDS = ['probe', 'audit', 'exec', 'bench', 'report', 'matrix', 'profiles', 'snapshot', 'doctor'];

describe('--json failures are JSON on stdout, the message on stderr, exit codes as documented', () => {
  it.each([
    [['probe', '--json', '--snapshot', 'no-such'], 2, 'ERR_SNAPSHOT_NOT_FOUND'],
    [['probe', '--json', '--bogus'], 2, 'ERR_USAGE'],
    [['audit', '--json', '--snapshot', STOCK, '--profile', 'apple99'], 2, 'ERR_INVALID_PROFILE'],
    [['audit', '--json', '--snapshot', STOCK, '--engine', 'mlx', '--rules', 'legacy'], 2, 'ERR_USAGE'],
    [['report', '--json', '--snapshot', '/nonexistent/x.json'], 2, 'ERR_SNAPSHOT_NOT_FOUND'],
    [['matrix', '--json', '/nonexistent/report.json'], 2, 'ERR_FILE'],
    [['audit', '--json'], EXIT.noMetal, 'ERR_UNSUPPORTED_PLATFORM'],
  ])('%j: exit %i, {"error": {"code": %s, …}}', (args, status, code) => {
    const r = runCli(args as string[], NO_SIM);
    expect(r.status).toBe(status);
    const printed = JSON.parse(r.stdout) as { error: { code: string; message: string } };
    expect(Object.keys(printed)).toEqual(['error']);
    expect(Object.keys(printed.error)).toEqual(['code', 'message']);
    expect(printed.error.code).toBe(code);
    expect(r.stderr.split('\n')[0]).toBe(`metal-cap-shim: ${code}: ${printed.error.message}`);
  });

  it('exec --json: the program owns stdout, so its own failure is the JSON line on stderr', () => {
    const r = runCli(['exec', '--json', '--', 'no-such-program-here'], NO_SIM);
    expect(r.status).toBe(127);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trim().split('\n');
    expect(lines).toEqual([
      'metal-cap-shim: ERR_COMMAND_NOT_FOUND: command not found: no-such-program-here',
      JSON.stringify({ error: { code: 'ERR_COMMAND_NOT_FOUND', message: 'command not found: no-such-program-here' } }),
    ]);
  });

  it('without --json a failure is the human line only, nothing on stdout', () => {
    const r = runCli(['probe', '--snapshot', 'no-such']);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^metal-cap-shim: ERR_SNAPSHOT_NOT_FOUND: no bundled snapshot named 'no-such'/);
  });
});

describe('a tested checkout still behaves like Linux', () => {
  it('without METAL_CAP_SHIM_SIM_SNAPSHOT, probe --json fails with ERR_UNSUPPORTED_PLATFORM (exit 4, no Metal), though build/Release exists', () => {
    const r = runCli(['probe', '--json'], NO_SIM);
    expect(r.status).toBe(EXIT.noMetal);
    const message = `Metal exists only on macOS; this is ${process.platform}. Offline, on any OS: metal-cap-shim probe --snapshot vz-guest-m1-ultra-tahoe-stock`;
    expect(JSON.parse(r.stdout)).toEqual({ error: { code: 'ERR_UNSUPPORTED_PLATFORM', message } });
    const human = runCli(['probe'], NO_SIM);
    expect(human.stderr).not.toMatch(/test build|build:sim|npm run|simulated/i);
  });
});

describe('--version works at top level and on every command', () => {
  it.each([
    [['--version']],
    [['-v']],
    ...COMMANDS.map((c) => [[c, '--version']]),
    [['exec', '--version', '--', 'false']],
  ])('%j', (args) => {
    const r = runCli(args);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(`${version}\n`);
    expect(r.stderr).toBe('');
  });
});

describe('--help lists the bundled snapshot names', () => {
  it.each([
    [['--help']],
    [['probe', '--help']],
    [['audit', '--help']],
    [['report', '--help']],
    [['doctor', '--help']],
    [['help', 'probe']],
  ])('%j', (args) => {
    const r = runCli(args);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`Bundled snapshots: ${listSnapshots().join(', ')}`);
  });

  it('the main help lists every command, snapshot and doctor included, and no other', () => {
    const r = runCli(['--help']);
    const listed = r.stdout.split('Commands:\n')[1]!.split('\n\n')[0]!.split('\n');
    expect(listed.map((line) => /^ {2}(\S+) +\S/.exec(line)?.[1])).toEqual(COMMANDS);
  });

  it.each(COMMANDS)('%s --help: its usage on stdout, exit 0, nothing on stderr', (c) => {
    const r = runCli([c, '--help']);
    expect(r.status).toBe(0);
    expect(r.stdout.split('\n')[0]).toMatch(new RegExp(`^Usage: metal-cap-shim ${c} [[]`));
    expect(r.stderr).toBe('');
  });
});

describe('usage details', () => {
  it('exec without -- suggests the command line with --', () => {
    const r = runCli(['exec', '--profile', 'apple7', 'llama-bench', '-m', 'model.gguf']);
    expect(r.status).toBe(125);
    expect(r.stderr.split('\n')[0]).toBe(
      "metal-cap-shim: ERR_USAGE: put `--` before the program, so that its options are not read as exec's: metal-cap-shim exec --profile apple7 -- llama-bench -m model.gguf",
    );
  });

  it.each([
    [
      ['audit', '--snapshot', STOCK, '--profile', 'apple7', '--profile', 'cua-release'],
      '--profile is given 2 times; give it once',
    ],
    [['probe', '--snapshot', STOCK, '--snapshot=m1-ultra-bare-metal'], '--snapshot is given 2 times; give it once'],
    [
      ['report', '--host-label', 'a', '--host-label', 'b', '--host-label', 'c'],
      '--host-label is given 3 times; give it once',
    ],
    [
      ['audit', '--snapshot', STOCK, '--engine', 'mlx', '--rules', 'legacy'],
      '--rules legacy applies to llama.cpp only, but --engine is mlx',
    ],
    [
      ['audit', '--snapshot', STOCK, '--rules', 'current', '--engine', 'mlx'],
      '--rules current applies to llama.cpp only, but --engine is mlx',
    ],
    [
      ['audit', '--snapshot', STOCK, '--engine', 'llama.cpp', '--mlx-arch', 'applegpu_g13d'],
      '--mlx-arch applies to MLX only, but --engine is llama.cpp',
    ],
    [
      ['audit', '--snapshot', STOCK, '--mlx-release', 'latest'],
      "--mlx-release must be an MLX release like v0.31.0 or 0.31.0, got 'latest'",
    ],
  ])('%j is a usage error: %s', (args, message) => {
    const r = runCli(args as string[]);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.split('\n')[0]).toBe(`metal-cap-shim: ERR_USAGE: ${message}`);
  });

  it('a repeated boolean flag is harmless', () => {
    expect(runCli(['probe', '--snapshot', STOCK, '--json', '--json']).status).toBe(0);
  });

  it('--rules with llama.cpp (or all engines) is fine', () => {
    expect(runCli(['audit', '--snapshot', STOCK, '--rules', 'legacy']).status).toBe(0);
    expect(runCli(['audit', '--snapshot', STOCK, '--rules', 'legacy', '--engine', 'llama.cpp']).status).toBe(0);
  });

  it('plurals agree with their count', () => {
    const one = runCli(['audit', '--snapshot', STOCK, '--profile', '{"maxThreadgroupMemoryLength":49152}']);
    expect(one.stdout).toMatch(
      /^Verdict: custom profile on Apple Paravirtual device: 1 answer changes; llama.cpp gates unchanged; 1 warning$/m,
    );
    const many = runCli(['audit', '--snapshot', STOCK, '--profile', 'apple7']);
    expect(many.stdout).toMatch(/^Verdict: apple7 on Apple Paravirtual device: 2 answers change; .*gates|has_/m);
    expect(many.stdout).not.toMatch(/\b1 answers\b|\b1 warnings\b/);
  });

  it('profiles --json carries a schema tag like the other JSON outputs', () => {
    const out = JSON.parse(runCli(['profiles', '--json']).stdout) as {
      schema: string;
      default: string;
      profiles: { name: string; aboveHardwareRefused: string[] }[];
    };
    expect(Object.keys(out)).toEqual(['schema', 'default', 'aboveHardwareReference', 'profiles']);
    expect(out.schema).toBe('metal-cap-shim/profiles@1');
    // The rule sets each built-in is refused for on the stock guest: cua-release's 65536 bytes under ggml-metal.m.
    expect(out.profiles.map((p) => [p.name, p.aboveHardwareRefused])).toEqual([
      ['host-family', []],
      ['cua-release', ['legacy-b1853', 'legacy']],
      ['apple9-hw-tg', []],
      ['apple7', []],
      ['mask-apple5', []],
      ['host', []],
    ]);
  });
});

describe('files given to --snapshot and matrix: one line saying what is wrong', () => {
  const files = {
    folder: path.join(dir, 'a-folder.json'),
    empty: path.join(dir, 'empty.json'),
    binary: path.join(dir, 'binary.json'),
    syntax: path.join(dir, 'syntax.json'),
    truncated: path.join(dir, 'truncated.json'),
  };
  beforeAll(() => {
    mkdirSync(files.folder);
    writeFileSync(files.empty, '');
    writeFileSync(
      files.binary,
      Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x00, 0xff, 0xfe, 0x1b, 0x5b, 0x32, 0x4a]),
    );
    writeFileSync(files.syntax, '{\n  "schema": "x",\n  oops\n}\n');
    writeFileSync(files.truncated, '{"schema": "metal-cap-shim/snapshot@1", "id": ');
  });

  it.each([
    ['folder', 'is a directory, not a file'],
    ['empty', 'is empty'],
    ['binary', 'is not a text file (it holds binary data), so it is not JSON'],
    ['syntax', 'is not JSON (syntax error at line 3, column 3: expected a property name in double quotes)'],
    ['truncated', 'is not JSON: it ends in the middle of a value (line 1, column 47)'],
  ] as const)('--snapshot %s: "%s"', (which, problem) => {
    const r = runCli(['probe', '--snapshot', files[which]]);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`metal-cap-shim: ERR_INVALID_SNAPSHOT: snapshot file ${files[which]} ${problem}\n`);
  });

  it.each([
    ['folder', 'is a directory, not a file'],
    ['empty', 'is empty'],
    ['binary', 'is not a text file (it holds binary data), so it is not JSON'],
  ] as const)('matrix %s: "%s"', (which, problem) => {
    const r = runCli(['matrix', files[which]]);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(`metal-cap-shim: ERR_FILE: ${files[which]} ${problem}\n`);
  });
});

describe('matrix counts the same report once', () => {
  it('the same file twice, or a copy, is one report; a second real report still counts', () => {
    const a = path.join(dir, 'a.json');
    const copy = path.join(dir, 'copy-of-a.json');
    const b = path.join(dir, 'b.json');
    const reportA = runCli(['report', '--json', '--snapshot', STOCK, '--host-label', 'host A']).stdout;
    writeFileSync(a, reportA);
    writeFileSync(copy, reportA);
    writeFileSync(b, runCli(['report', '--json', '--snapshot', STOCK, '--host-label', 'host A']).stdout);
    const r = runCli(['matrix', '--json', a, a, copy, b]);
    expect(r.status).toBe(0);
    const m = JSON.parse(r.stdout) as Matrix;
    expect(m.rows[0]!.cells['host-family']!.reports).toBe(2);
    expect(m.duplicates).toEqual([
      { where: a, sameAs: a },
      { where: copy, sameAs: a },
    ]);
    expect(r.stderr.trim().split('\n')).toEqual([
      `metal-cap-shim: ${a} is the same report as ${a}: counted once`,
      `metal-cap-shim: ${copy} is the same report as ${a}: counted once`,
    ]);
    const report = JSON.parse(reportA) as FieldReport;
    expect(report.schema).toBe('metal-cap-shim/field-report@1');
  });
});

describe('a write error on stdout is one line and exit 1; a reader that went away is not an error', () => {
  it.each([[['profiles', '--json']], [['probe', '--snapshot', STOCK]], [['--help']]])('%j > /dev/full', (args) => {
    const r = spawnSync('sh', ['-c', `"${process.execPath}" "${cli}" ${args.join(' ')} > /dev/full`], {
      encoding: 'utf8',
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toBe('metal-cap-shim: cannot write to stdout: no space left on the device (ENOSPC)\n');
  });

  it('a reader that has closed the pipe (`| head`): nothing on stderr, and the exit code of a normal run', async () => {
    // The read end is closed before the CLI has even started, so its first write meets EPIPE.
    const child = spawn(process.execPath, [cli, 'profiles', '--json'], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const status = await new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    expect({ status, stderr }).toEqual({ status: 0, stderr: '' });
  });

  it('a closed pipe keeps a command’s own exit code: probe --json where nothing can be asked still exits 4 (no Metal)', async () => {
    const child = spawn(process.execPath, [cli, 'probe', '--json'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, METAL_CAP_SHIM_SIM_SNAPSHOT: undefined },
    });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const status = await new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    expect({ status, stderr: stderr.split(': ').slice(0, 2) }).toEqual({
      status: EXIT.noMetal,
      stderr: ['metal-cap-shim', 'ERR_UNSUPPORTED_PLATFORM'],
    });
  });
});

describe('exec --allow-unpatched: a cross-platform wrapper', () => {
  it('runs the program unpatched where there is no Metal, with one notice on stderr, and passes its exit code through', () => {
    const r = runCli(['exec', '--allow-unpatched', '--', 'sh', '-c', 'echo out; echo err >&2; exit 7'], NO_SIM);
    expect(r.status).toBe(7);
    expect(r.stdout).toBe('out\n');
    expect(r.stderr).toBe(
      `metal-cap-shim: exec injects into programs that use Metal, which exists only on macOS; this is ${process.platform}: running sh unpatched (--allow-unpatched)\nerr\n`,
    );
  });

  it('without --allow-unpatched it refuses to run: ERR_UNSUPPORTED_PLATFORM, exit 125 (exec’s own failure), the program never starts', () => {
    const marker = path.join(dir, 'should-not-exist');
    const r = runCli(['exec', '--', 'sh', '-c', `touch ${marker}`], NO_SIM);
    expect(r.status).toBe(125);
    expect(r.stderr).toContain('ERR_UNSUPPORTED_PLATFORM');
    expect(r.stderr).toContain('--allow-unpatched runs the program unpatched');
    expect(spawnSync('test', ['-e', marker]).status).toBe(1);
  });
});

describeSim('exec --allow-unpatched where the profile would be refused (simulated bare metal)', () => {
  beforeAll(requireSimBuild);
  it('runs the program without the injector, one notice, exit code passed through', () => {
    const r = runCli(
      ['exec', '--allow-unpatched', '--profile', 'cua-release', '--', 'sh', '-c', 'printf %s "$LD_PRELOAD"; exit 3'],
      {
        METAL_CAP_SHIM_SIM_SNAPSHOT: 'm1-ultra-bare-metal',
      },
    );
    expect(r.status).toBe(3);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^metal-cap-shim: refusing to raise Metal answers: this host is not a virtual machine .* Running sh unpatched \(--allow-unpatched\)\.$/,
    );
  });
});

describe('each command loads only its own code', () => {
  // The files a module loads before it runs: its static imports, followed transitively (dynamic import() excluded).
  const staticClosure = (file: string, seen = new Set<string>()): Set<string> => {
    if (seen.has(file)) return seen;
    seen.add(file);
    const source = readFileSync(path.join(root, 'dist', file), 'utf8');
    for (const m of source.matchAll(/^(?:import|export)\s[^;]*?from\s*"\.\/([^"]+)"|^import\s*"\.\/([^"]+)"/gms)) {
      staticClosure(m[1] ?? m[2]!, seen);
    }
    return seen;
  };
  const text = (files: Set<string>) =>
    [...files].map((f) => readFileSync(path.join(root, 'dist', f), 'utf8')).join('\n');
  const commandChunk = (name: string) => {
    const match = new RegExp(`${name}: \\{[^}]*import\\("\\./([^"]+)"\\)`).exec(readFileSync(cli, 'utf8'));
    expect(match, `dist/cli.js has no lazily loaded module for ${name}`).not.toBeNull();
    return match![1]!;
  };

  it('dist/cli.js loads no command and no part of the library up front', () => {
    const loaded = text(staticClosure('cli.js'));
    for (const marker of [
      'has_simdgroup_reduction',
      'DYLD_INSERT_LIBRARIES',
      'metal-cap-shim/snapshot@1',
      'node-gyp-build',
    ]) {
      expect(loaded).not.toContain(marker);
    }
  });

  it.each(COMMANDS)('%s is its own chunk, imported only when it runs', (name) => {
    expect(commandChunk(name)).toMatch(new RegExp(`^${name}-[A-Z0-9]+\\.js$`));
  });

  it('probe does not load the gate tables, exec, or the field reports', () => {
    const loaded = text(staticClosure(commandChunk('probe')));
    expect(loaded).toContain('metal-cap-shim/report@1');
    for (const marker of ['has_simdgroup_reduction', 'DYLD_INSERT_LIBRARIES', 'metal-cap-shim/matrix@2']) {
      expect(loaded).not.toContain(marker);
    }
  });
});
