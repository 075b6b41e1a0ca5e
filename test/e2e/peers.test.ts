// The CLI among its peers (gh, nvidia-smi, system_profiler): a one-line mode, usage errors that are one line and a
// hint with "did you mean", exit codes that mean one thing, `--json --version`, `--quiet`, one numeric parser,
// `--color`, doctor's progress on a terminal, matrix columns per custom profile, and recordings replayed whole.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { DoctorReport } from '../../lib/doctor/index.js';
import type { Matrix } from '../../lib/audit/field-report.js';
import { colorWanted, stylerFor } from '../../lib/format/text.js';
import { closest, editDistance } from '../../lib/core/suggest.js';
import { cli, describeSim, dist, requireSimBuild, root, runCli } from '../support/helpers.js';
import { EXIT } from '../../lib/cli/exit.js';
import { colorArgs } from '../../lib/cli/main.js';

const dir = mkdtempSync(path.join(tmpdir(), 'mcs-peers-'));
const STOCK = 'vz-guest-m1-ultra-tahoe-stock';
const NO_SIM = { METAL_CAP_SHIM_SIM_SNAPSHOT: undefined };
const version = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string }).version;

/** Runs `command` (a shell line) on a pseudo-terminal with script(1): what the terminal showed. */
function onTerminal(command: string, env: NodeJS.ProcessEnv): string {
  const r = spawnSync('script', ['-qec', command, '/dev/null'], {
    encoding: 'utf8',
    env: { ...process.env, SHELL: '/bin/sh', ...env },
    timeout: 60_000,
  });
  if (r.status !== 0 && r.status !== 1) throw new Error(`script exited ${r.status}: ${r.stderr}`);
  return r.stdout;
}
const quoted = (args: string[]) => [process.execPath, cli, ...args].map((a) => `'${a}'`).join(' ');

describe('probe --short: one line per device', () => {
  it('a stock VM guest: Apple5 → Apple7 under the default (the M1 Ultra host’s own family), VM, the three gates turning on', () => {
    const r = runCli(['probe', '--short', '--snapshot', STOCK]);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(
      '0*: Apple Paravirtual device · Apple5 → Apple7 (host-family) · threadgroup memory 32 KiB · architecture unrecorded → applegpu_g13d (MLX) · VM · llama.cpp reduction no → yes, mm no → yes, bfloat no → yes\n',
    );
  });

  it('cua-release: Apple5 → Apple9, 32 → 64 KiB', () => {
    const r = runCli(['probe', '--short', '--snapshot', STOCK, '--profile', 'cua-release']);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(
      '0*: Apple Paravirtual device · Apple5 → Apple9 (cua-release) · threadgroup memory 32 KiB → 64 KiB · architecture unrecorded · VM · llama.cpp reduction no → yes, mm no → yes, bfloat no → yes\n',
    );
  });

  it('bare metal: the raise would be refused, so the line shows the stock values and says so; the default changes nothing there', () => {
    expect(runCli(['probe', '--short', '--snapshot', 'm1-ultra-bare-metal', '--profile', 'cua-release']).stdout).toBe(
      '0*: Apple M1 Ultra · Apple7 (cua-release refused: not a VM) · threadgroup memory 32 KiB · architecture applegpu_g13d · not a VM · llama.cpp reduction yes, mm yes, bfloat yes\n',
    );
    expect(runCli(['probe', '--short', '--snapshot', 'm1-ultra-bare-metal']).stdout).toBe(
      '0*: Apple M1 Ultra · Apple7 (host-family) · threadgroup memory 32 KiB · architecture applegpu_g13d · not a VM · llama.cpp reduction yes, mm yes, bfloat yes\n',
    );
  });

  it('every device of a two-GPU Mac, one line each; the default, with no Apple chip to bind, names its fallback', () => {
    expect(runCli(['probe', '--short', '--snapshot', 'macbookpro16-intel-amd-two-gpus']).stdout).toBe(
      '0: Intel(R) UHD Graphics 630 · no Apple family (host-family → apple7 refused: not a VM) · threadgroup memory 64 KiB · architecture unrecorded · not a VM · llama.cpp reduction yes, mm no, bfloat yes\n' +
        '1*: AMD Radeon Pro 5500M · no Apple family (host-family → apple7 refused: not a VM) · threadgroup memory 64 KiB · architecture unrecorded · not a VM · llama.cpp reduction yes, mm no, bfloat yes\n',
    );
  });

  it('--profile sets what the arrows show', () => {
    expect(runCli(['probe', '--short', '--snapshot', STOCK, '--profile', 'apple7']).stdout).toBe(
      '0*: Apple Paravirtual device · Apple5 → Apple7 (apple7) · threadgroup memory 32 KiB · architecture unrecorded · VM · llama.cpp reduction no → yes, mm no → yes, bfloat no → yes\n',
    );
  });

  it('the architecture each device reports, and the one the profile offers MLX; a refused offer says so', () => {
    expect(runCli(['probe', '--short', '--snapshot', 'github-macos-14-arm64-runner', '--profile', 'host']).stdout).toBe(
      '0*: Apple Paravirtual device · no Apple family → Apple7 (host) · threadgroup memory 32 KiB · architecture unrecorded → applegpu_g13g (MLX) · VM · llama.cpp reduction no → yes, mm no → yes, bfloat no → yes\n',
    );
    expect(
      runCli(['probe', '--short', '--snapshot', STOCK, '--profile', '{"mlxArchitecture": "applegpu_g14g"}']).stdout,
    ).toBe(
      '0*: Apple Paravirtual device · Apple5 (custom profile refused: its MLX architecture) · threadgroup memory 32 KiB · architecture unrecorded · VM · llama.cpp reduction no, mm no, bfloat no\n',
    );
  });

  it.each([
    [['probe', '--short', '--json', '--snapshot', STOCK], '--short and --json are two forms of the output: give one'],
    [
      ['probe', '--profile', 'apple7', '--snapshot', STOCK],
      '--profile goes with --short (probe itself reports stock answers)',
    ],
  ])('%j is a usage error', (args, message) => {
    expect(runCli(args).stderr).toBe(
      `metal-cap-shim: ERR_USAGE: ${message}\nRun \`metal-cap-shim probe --help\` for usage.\n`,
    );
  });
});

describe('did you mean', () => {
  it.each([
    [
      ['audti'],
      'ERR_USAGE',
      "unknown command 'audti' (did you mean 'audit'?); commands: probe, audit, exec, bench, report, matrix, profiles, snapshot, doctor",
    ],
    [
      ['audit', '--snapshot', STOCK, '--profile', 'cua-relase'],
      'ERR_INVALID_PROFILE',
      "unknown profile 'cua-relase' (did you mean 'cua-release'?); built-in profiles are host-family, cua-release, apple9-hw-tg, apple7, mask-apple5, host, or pass a JSON object",
    ],
    [['probe', '--snapshto', STOCK], 'ERR_USAGE', "unknown option '--snapshto' (did you mean '--snapshot'?)"],
    [
      ['probe', '--snapshot', 'vz-guest-m1-ultra-tahoe-stok'],
      'ERR_SNAPSHOT_NOT_FOUND',
      "no bundled snapshot named 'vz-guest-m1-ultra-tahoe-stok' (did you mean the bundled snapshot 'vz-guest-m1-ultra-tahoe-stock'?); bundled snapshots: github-macos-14-arm64-runner, m1-ultra-bare-metal, macbookpro16-intel-amd-two-gpus, vz-guest-m1-ultra-tahoe-stock (or pass a path to a .json file)",
    ],
  ])('%j', (args, code, message) => {
    expect(runCli(args).stderr.split('\n')[0]).toBe(`metal-cap-shim: ${code}: ${message}`);
  });

  it('an unknown option before the command is named as an option', () => {
    expect(runCli(['--frobnicate', 'probe']).stderr).toBe(
      "metal-cap-shim: ERR_USAGE: unknown option '--frobnicate' before the command; commands: probe, audit, exec, bench, report, matrix, profiles, snapshot, doctor\nRun `metal-cap-shim --help` for usage.\n",
    );
  });

  it('a bundled name given as a file name (vz-guest-m1-ultra-tahoe-stock.json, from another folder)', () => {
    const r = spawnSync(process.execPath, [cli, 'probe', '--snapshot', `${STOCK}.json`], {
      cwd: dir,
      encoding: 'utf8',
      env: { ...process.env, NO_COLOR: '1' },
    });
    expect(r.stderr).toBe(
      `metal-cap-shim: ERR_SNAPSHOT_NOT_FOUND: snapshot file ${path.join(dir, `${STOCK}.json`)} does not exist (did you mean the bundled snapshot '${STOCK}'?)\n`,
    );
  });

  it('nothing is suggested for a name nowhere near, or for an input far longer than every name', () => {
    expect(closest('frobnicate', ['probe', 'audit', 'exec'])).toBeNull();
    expect(closest(`audit${'x'.repeat(1_000_000)}`, ['audit', 'doctor'])).toBeNull();
  });

  it('the edit distance counts a swap as one edit and stops at its limit', () => {
    expect([
      editDistance('audti', 'audit', 3),
      editDistance('cua-relase', 'cua-release', 3),
      editDistance('abc', 'xyz', 1),
      editDistance('a', 'abcdef', 2),
    ]).toEqual([1, 1, 2, 3]);
  });
});

describe('doctor exit codes, from the one table: 0 no fault, 1 a fault, 2 usage, 4 no Metal', () => {
  it('0: a recording with no fault', () => {
    expect(runCli(['doctor', '--snapshot', 'm1-ultra-bare-metal']).status).toBe(0);
  });

  it('1: a recorded fault, and the JSON says it was replayed', () => {
    const r = runCli(['doctor', '--json', '--snapshot', 'github-macos-14-arm64-runner']);
    expect(r.status).toBe(1);
    const report = JSON.parse(r.stdout) as DoctorReport;
    expect([report.replayed, report.source, report.devices[0]!.faults]).toEqual([
      true,
      'snapshot',
      ['nocopy-mmap: wrong-result'],
    ]);
    expect(runCli(['doctor', '--snapshot', 'github-macos-14-arm64-runner']).stdout).toContain(
      '  Faults: nocopy-mmap: wrong-result (recorded in snapshot github-macos-14-arm64-runner and replayed: not measured now)\n',
    );
  });

  it('2: usage', () => {
    expect(runCli(['doctor', '--frobnicate']).status).toBe(2);
  });

  it('4: no Metal here, with or without --json', () => {
    expect(runCli(['doctor'], NO_SIM).status).toBe(EXIT.noMetal);
    expect(runCli(['doctor', '--json'], NO_SIM).status).toBe(EXIT.noMetal);
  });

  it('--help documents them', () => {
    expect(
      runCli(['doctor', '--help']).stdout,
    ).toContain(`Exit codes (every command's): 0 no probe found a fault (each is proven, absent from this OS, or says why it
taught nothing); 1 a probe found a fault (with --snapshot: the recording holds one, and the output says it was
replayed); 2 usage (an unknown option, a bad number, a profile or snapshot that cannot be used); 4 no Metal here
(no device, the native module will not load).`);
  });
});

describe('--json --version, --quiet, --profile FILE', () => {
  const asJson = JSON.stringify({ schema: 'metal-cap-shim/version@1', name: 'metal-cap-shim', version });

  it.each([
    [['--json', '--version']],
    [['--version', '--json']],
    [['probe', '--json', '--version']],
    [['--json', 'probe', '--version']],
  ])('%j: the version as JSON', (args) => {
    const r = runCli(args);
    expect([r.status, r.stdout, r.stderr]).toEqual([0, `${asJson}\n`, '']);
  });

  it('--quiet leaves out exec’s notices; the program’s own stderr and exit code stay', () => {
    const loud = runCli(['exec', '--allow-unpatched', '--', 'sh', '-c', 'echo err >&2; exit 4'], NO_SIM);
    const quiet = runCli(['exec', '--allow-unpatched', '--quiet', '--', 'sh', '-c', 'echo err >&2; exit 4'], NO_SIM);
    expect(loud.stderr).toMatch(/^metal-cap-shim: exec injects into programs that use Metal/);
    expect([quiet.status, quiet.stderr]).toEqual([4, 'err\n']);
  });

  it('--quiet does not silence an error of exec itself', () => {
    const r = runCli(['exec', '--quiet', '--', 'true'], NO_SIM);
    expect(r.stderr).toMatch(/^metal-cap-shim: ERR_UNSUPPORTED_PLATFORM: /);
  });

  it('--profile takes a file, as --snapshot does; a profile printed by audit --json reads back', () => {
    const printed = (
      JSON.parse(runCli(['audit', '--json', '--snapshot', STOCK, '--profile', 'apple7']).stdout) as { profile: unknown }
    ).profile;
    const file = path.join(dir, 'apple7.json');
    writeFileSync(file, JSON.stringify(printed));
    const r = runCli(['audit', '--json', '--snapshot', STOCK, '--profile', file]);
    expect((JSON.parse(r.stdout) as { profile: unknown }).profile).toEqual(printed);
    expect(runCli(['audit', '--snapshot', STOCK, '--profile', path.join(dir, 'none.json')]).stderr).toBe(
      `metal-cap-shim: ERR_INVALID_PROFILE: profile file ${path.join(dir, 'none.json')} does not exist\n`,
    );
  });
});

describe('numbers: one parser, one error code, in the flag’s own words', () => {
  it.each([
    [
      ['--mmap-size', '-1'],
      "--mmap-size takes a size in bytes from 1M to 64G, a multiple of 16K (K, M and G are binary: 512M, 3G, 1.5G), got '-1'",
    ],
    [
      ['--mmap-size', '0'],
      "--mmap-size takes a size in bytes from 1M to 64G, a multiple of 16K (K, M and G are binary: 512M, 3G, 1.5G), got '0'",
    ],
    [
      ['--mmap-size', '1.5'],
      "--mmap-size takes a size in bytes from 1M to 64G, a multiple of 16K (K, M and G are binary: 512M, 3G, 1.5G), got '1.5'",
    ],
    [
      ['--mmap-size', '1000001'],
      "--mmap-size takes a size in bytes from 1M to 64G, a multiple of 16K (K, M and G are binary: 512M, 3G, 1.5G), got '1000001'",
    ],
    [['--timeout-ms', '1e3'], "--timeout-ms takes a whole number of milliseconds from 100 to 600000, got '1e3'"],
    [['--timeout-ms', '99'], "--timeout-ms takes a whole number of milliseconds from 100 to 600000, got '99'"],
    [['--device', '-1'], "--device takes a device index from 0 to 1023, got '-1'"],
    [['--device', '1024'], "--device takes a device index from 0 to 1023, got '1024'"],
  ])('doctor %j: ERR_USAGE, one line and the hint', (flags, message) => {
    const r = runCli(['doctor', ...flags], NO_SIM);
    expect([r.status, r.stderr]).toEqual([
      2,
      `metal-cap-shim: ERR_USAGE: ${message}\nRun \`metal-cap-shim doctor --help\` for usage.\n`,
    ]);
  });

  it('the same parser for report and snapshot', () => {
    expect(runCli(['report', '--mmap-size', '2x'], NO_SIM).stderr.split('\n')[0]).toBe(
      "metal-cap-shim: ERR_USAGE: --mmap-size takes a size in bytes from 1M to 64G, a multiple of 16K (K, M and G are binary: 512M, 3G, 1.5G), got '2x'",
    );
    expect(runCli(['snapshot', '--with-doctor', '--timeout-ms', 'soon'], NO_SIM).stderr.split('\n')[0]).toBe(
      "metal-cap-shim: ERR_USAGE: --timeout-ms takes a whole number of milliseconds from 100 to 600000, got 'soon'",
    );
  });

  it('--mmap-file - is a usage error: standard input cannot be mapped', () => {
    expect(runCli(['doctor', '--mmap-file', '-'], NO_SIM).stderr.split('\n')[0]).toBe(
      'metal-cap-shim: ERR_USAGE: --mmap-file needs a file doctor can map (your model); standard input (-) cannot be mapped',
    );
  });

  it('a string option followed by another option is "needs a value", not a value', () => {
    expect(runCli(['doctor', '--profile', '--json'], NO_SIM).stderr.split('\n')[0]).toBe(
      'metal-cap-shim: ERR_USAGE: --profile needs a value, but is followed by the option --json (write --profile=VALUE for a value that starts with --)',
    );
  });
});

describe('colour', () => {
  it('an empty NO_COLOR does not disable colour (no-color.org); a non-empty one does', () => {
    expect(stylerFor({ isTTY: true }, { NO_COLOR: '' }).bold('x')).toBe('\u001b[1mx\u001b[22m');
    expect(stylerFor({ isTTY: true }, { NO_COLOR: '1' }).bold('x')).toBe('x');
  });

  it('auto, as Node has it: a TTY colours, a pipe does not; FORCE_COLOR wins (0 and false turn colour off, on a terminal too) over NO_COLOR and TERM=dumb', () => {
    expect([
      colorWanted({ isTTY: true }, {}),
      colorWanted({ isTTY: false }, {}),
      colorWanted({ isTTY: false }, { FORCE_COLOR: '1' }),
      colorWanted({ isTTY: false }, { FORCE_COLOR: '' }),
      colorWanted({ isTTY: true }, { FORCE_COLOR: '0' }),
      colorWanted({ isTTY: true }, { FORCE_COLOR: 'false' }),
      colorWanted({ isTTY: true }, { TERM: 'dumb' }),
      colorWanted({ isTTY: true }, { NO_COLOR: '1' }),
      colorWanted({ isTTY: false }, { NO_COLOR: '1', FORCE_COLOR: '1' }),
      colorWanted({ isTTY: false }, { TERM: 'dumb', FORCE_COLOR: '2' }),
    ]).toEqual([true, false, true, true, false, false, false, false, true, true]);
  });

  it('--color alone is always and --no-color is never, before the command or after it; after exec’s -- they are the program’s', () => {
    expect(colorArgs(['probe', '--color'])).toEqual(['probe', '--color=always']);
    expect(colorArgs(['--color', 'probe'])).toEqual(['--color=always', 'probe']);
    expect(colorArgs(['probe', '--color', 'never'])).toEqual(['probe', '--color', 'never']);
    expect(colorArgs(['--no-color', 'probe'])).toEqual(['--color=never', 'probe']);
    expect(colorArgs(['exec', '--no-color', '--', 'prog', '--color', '--no-color'])).toEqual([
      'exec',
      '--color=never',
      '--',
      'prog',
      '--color',
      '--no-color',
    ]);
    const bare = runCli(['probe', '--snapshot', 'm1-ultra-bare-metal', '--color'], { NO_COLOR: '1' });
    expect([bare.status, /\u001b\[/.test(bare.stdout)]).toEqual([0, true]);
    const off = runCli(['--no-color', 'probe', '--snapshot', 'm1-ultra-bare-metal'], { FORCE_COLOR: '1' });
    expect([off.status, /\u001b\[/.test(off.stdout)]).toEqual([0, false]);
  });

  it('on a terminal with NO_COLOR empty, probe is coloured', () => {
    const shown = onTerminal(quoted(['probe', '--snapshot', 'm1-ultra-bare-metal']), {
      NO_COLOR: '',
      FORCE_COLOR: undefined,
    });
    expect(shown).toContain('\u001b[1mmetal-cap-shim probe\u001b[22m');
  });

  it('--color=always colours a pipe even with NO_COLOR; --color=never never colours', () => {
    expect(
      runCli(['probe', '--snapshot', 'm1-ultra-bare-metal', '--color=always'], { NO_COLOR: '1' }).stdout,
    ).toContain('\u001b[1mmetal-cap-shim probe\u001b[22m');
    expect(
      runCli(['--color', 'always', 'probe', '--snapshot', 'm1-ultra-bare-metal'], { NO_COLOR: '1' }).stdout,
    ).toContain('\u001b[1m');
    expect(
      runCli(['probe', '--snapshot', 'm1-ultra-bare-metal', '--color=never'], { NO_COLOR: '', FORCE_COLOR: '1' })
        .stdout,
    ).not.toContain('\u001b[');
  });

  it('one function decides (colorWanted), each rule on both sides: FORCE_COLOR=0 is off on a terminal too, a set FORCE_COLOR wins over NO_COLOR, always and never decide alone', () => {
    const tty = { isTTY: true };
    const pipe = { isTTY: false };
    expect({
      terminal: colorWanted(tty, {}),
      terminalForceZero: colorWanted(tty, { FORCE_COLOR: '0' }),
      terminalForceFalse: colorWanted(tty, { FORCE_COLOR: 'false' }),
      pipe: colorWanted(pipe, {}),
      pipeForceOne: colorWanted(pipe, { FORCE_COLOR: '1' }),
      terminalNoColor: colorWanted(tty, { NO_COLOR: '1' }),
      terminalNoColorForceOne: colorWanted(tty, { NO_COLOR: '1', FORCE_COLOR: '1' }),
      pipeNoColorForceThree: colorWanted(pipe, { NO_COLOR: '1', FORCE_COLOR: '3' }),
      terminalNoColorForceZero: colorWanted(tty, { NO_COLOR: '1', FORCE_COLOR: '0' }),
      autoIsTheDefault: colorWanted(tty, { FORCE_COLOR: '0' }, 'auto'),
      alwaysOnAPipeWithNoColorAndForceZero: colorWanted(pipe, { NO_COLOR: '1', FORCE_COLOR: '0' }, 'always'),
      neverOnATerminalWithForceOne: colorWanted(tty, { FORCE_COLOR: '1' }, 'never'),
    }).toEqual({
      terminal: true,
      terminalForceZero: false,
      terminalForceFalse: false,
      pipe: false,
      pipeForceOne: true,
      terminalNoColor: false,
      terminalNoColorForceOne: true,
      pipeNoColorForceThree: true,
      terminalNoColorForceZero: false,
      autoIsTheDefault: false,
      alwaysOnAPipeWithNoColorAndForceZero: true,
      neverOnATerminalWithForceOne: false,
    });
    // The styler a command gets is that decision, nothing more.
    expect({
      on: stylerFor(pipe, { FORCE_COLOR: '1', NO_COLOR: '1' }).bold('x'),
      off: stylerFor(tty, { FORCE_COLOR: '0' }).bold('x'),
      always: stylerFor(pipe, { FORCE_COLOR: '0' }, 'always').good('x'),
      never: stylerFor(tty, { FORCE_COLOR: '1' }, 'never').good('x'),
    }).toEqual({ on: '\u001b[1mx\u001b[22m', off: 'x', always: '\u001b[32mx\u001b[39m', never: 'x' });
  });

  it('--color alone is --color=always and --no-color is --color=never; --color=auto|always|never and --color VALUE are kept', () => {
    const forms = [
      ['--color'],
      ['--no-color'],
      ['--color=auto'],
      ['--color=always'],
      ['--color=never'],
      ['--color', 'auto'],
      ['--color', 'always'],
      ['--color', 'never'],
    ];
    expect(forms.map((f) => colorArgs(['probe', ...f]))).toEqual([
      ['probe', '--color=always'],
      ['probe', '--color=never'],
      ['probe', '--color=auto'],
      ['probe', '--color=always'],
      ['probe', '--color=never'],
      ['probe', '--color', 'auto'],
      ['probe', '--color', 'always'],
      ['probe', '--color', 'never'],
    ]);
  });

  it('the CLI on a pipe: --color prints what --color=always prints and --no-color what --color=never prints, whatever the environment says; FORCE_COLOR=1 wins over NO_COLOR', () => {
    const probe = (args: string[], env: NodeJS.ProcessEnv) => {
      const r = runCli(['probe', '--snapshot', 'm1-ultra-bare-metal', ...args], { TERM: 'xterm', ...env });
      return { status: r.status, stdout: r.stdout, stderr: r.stderr };
    };
    const unset = { NO_COLOR: undefined, FORCE_COLOR: undefined };
    const always = probe(['--color=always'], unset);
    const never = probe(['--color=never'], unset);
    expect([always.status, always.stdout.includes('\u001b['), never.status, never.stdout.includes('\u001b[')]).toEqual([
      0,
      true,
      0,
      false,
    ]);
    expect({
      colorAlone: probe(['--color'], { NO_COLOR: '1', FORCE_COLOR: '0' }),
      colorAloneBeforeTheCommand: runCli(['--color', 'probe', '--snapshot', 'm1-ultra-bare-metal'], {
        NO_COLOR: '1',
        FORCE_COLOR: '0',
      }).stdout,
      noColor: probe(['--no-color'], { NO_COLOR: undefined, FORCE_COLOR: '1' }),
      colorAuto: probe(['--color=auto'], unset),
      forceOverNoColor: probe([], { NO_COLOR: '1', FORCE_COLOR: '1' }),
      noColorAlone: probe([], { NO_COLOR: '1', FORCE_COLOR: undefined }),
      forceZero: probe([], { NO_COLOR: undefined, FORCE_COLOR: '0' }),
    }).toEqual({
      colorAlone: always,
      colorAloneBeforeTheCommand: always.stdout,
      noColor: never,
      colorAuto: never,
      forceOverNoColor: always,
      noColorAlone: never,
      forceZero: never,
    });
  });

  it('the CLI on a terminal: colour by default, none with FORCE_COLOR=0 (or false) or --no-color', () => {
    const args = ['probe', '--snapshot', 'm1-ultra-bare-metal'];
    const env = { NO_COLOR: '', FORCE_COLOR: undefined, TERM: 'xterm' };
    const always = onTerminal(quoted([...args, '--color=always']), env);
    const never = onTerminal(quoted([...args, '--color=never']), env);
    expect([always.includes('\u001b[1mmetal-cap-shim probe\u001b[22m'), never.includes('\u001b[')]).toEqual([
      true,
      false,
    ]);
    expect({
      byDefault: onTerminal(quoted(args), env),
      forceZero: onTerminal(quoted(args), { ...env, FORCE_COLOR: '0' }),
      forceFalse: onTerminal(quoted(args), { ...env, FORCE_COLOR: 'false' }),
      noColorFlag: onTerminal(quoted([...args, '--no-color']), env),
    }).toEqual({ byDefault: always, forceZero: never, forceFalse: never, noColorFlag: never });
  });

  it('--color takes auto, always or never', () => {
    expect(runCli(['probe', '--color=rainbow']).stderr.split('\n')[0]).toBe(
      "metal-cap-shim: ERR_USAGE: --color takes auto, always or never, got 'rainbow'",
    );
  });
});

describe('matrix keeps custom profiles apart', () => {
  const report = (profile: string) => {
    const file = path.join(dir, `r-${createHash('sha256').update(profile).digest('hex').slice(0, 6)}.json`);
    writeFileSync(file, runCli(['report', '--json', '--snapshot', STOCK, '--profile', profile]).stdout);
    return file;
  };
  const column = (json: string) => `custom-${createHash('sha256').update(json).digest('hex').slice(0, 8)}`;

  it('a column per normalised custom profile, named by its hash; the same profile written twice shares one', () => {
    const files = [
      report('{"appleFamilyMax":1008}'),
      report('{"mode":"raise","appleFamilyMax":1008}'),
      report('{"appleFamilyMax":1006}'),
      report('apple7'),
    ];
    const m = JSON.parse(runCli(['matrix', '--json', ...files]).stdout) as Matrix;
    const c1008 = column(
      '{"name":null,"appleFamilyMax":1008,"maxThreadgroupMemoryLength":null,"recommendedMaxWorkingSetSize":null,"deviceName":null,"families":{},"mode":"raise"}',
    );
    const c1006 = column(
      '{"name":null,"appleFamilyMax":1006,"maxThreadgroupMemoryLength":null,"recommendedMaxWorkingSetSize":null,"deviceName":null,"families":{},"mode":"raise"}',
    );
    expect(m.profiles).toEqual(['apple7', c1006, c1008].sort());
    expect(m.rows[0]!.cells[c1008]!.reports).toBe(2);
    expect(runCli(['matrix', ...files]).stdout.split('\n')[0]).toBe(
      `| Host | Guest OS | Architecture | ${m.profiles.join(' | ')} | Proven profile (doctor) | Faults (doctor) | Speed-up (bench) | Fidelity (bench) |`,
    );
  });

  it('a report whose profile name is not a string is refused', () => {
    const data = JSON.parse(readFileSync(report('apple7'), 'utf8')) as { audit: { profile: { name: unknown } } };
    data.audit.profile.name = 7;
    const file = path.join(dir, 'numeric-name.json');
    writeFileSync(file, JSON.stringify(data));
    expect(runCli(['matrix', file]).stderr).toBe(
      `metal-cap-shim: ERR_INVALID_REPORT: ${file} is not a usable metal-cap-shim field report (audit.profile.name must be a string or null, got 7); make one with \`metal-cap-shim report --json\`\n`,
    );
  });

  it('a report claiming a built-in name for other settings goes in a custom column', () => {
    const data = JSON.parse(readFileSync(report('apple7'), 'utf8')) as {
      audit: { profile: { appleFamilyMax: number } };
    };
    data.audit.profile.appleFamilyMax = 1009;
    const file = path.join(dir, 'forged-name.json');
    writeFileSync(file, JSON.stringify(data));
    const m = JSON.parse(runCli(['matrix', '--json', file]).stdout) as Matrix;
    expect(m.profiles).toEqual([
      column(
        '{"name":null,"appleFamilyMax":1009,"maxThreadgroupMemoryLength":null,"recommendedMaxWorkingSetSize":null,"deviceName":null,"families":{},"mode":"raise"}',
      ),
    ]);
  });
});

describeSim('doctor on a terminal: one updating progress line per probe on stderr', () => {
  beforeAll(requireSimBuild);
  const env = { METAL_CAP_SHIM_SIM_SNAPSHOT: STOCK, XDG_CACHE_HOME: dir, NO_COLOR: '1' };

  it('a TTY stderr shows each probe as it starts, rewritten in place, and clears it at the end', () => {
    const shown = onTerminal(`${quoted(['doctor', '--mmap-size', '1M'])} > '${path.join(dir, 'doctor.txt')}'`, env);
    const updates = shown.split('\r\u001b[K').filter(Boolean);
    // The line is also redrawn once a second while a probe runs (its time): on a loaded machine a probe shows twice.
    const probes = updates.map((u) => u.replace(/ … \d+\.\d s$/, '')).filter((u, i, all) => u !== all[i - 1]);
    expect(probes).toEqual([
      'doctor: simdgroup-reduction (stock run)',
      'doctor: simdgroup-matrix (stock run)',
      'doctor: bfloat (stock run)',
      'doctor: nocopy-mmap (stock run)',
      'doctor: residency-set (stock run)',
      'doctor: heap (stock run)',
      'doctor: simdgroup-reduction (patched run)',
      'doctor: simdgroup-matrix (patched run)',
      'doctor: bfloat (patched run)',
      'doctor: residency-set (patched run)',
      'doctor: heap (patched run)',
      // The probe that goes past the stock limit runs last, in both runs.
      'doctor: threadgroup-memory (stock run)',
      'doctor: threadgroup-memory (patched run)',
    ]);
    expect(shown.endsWith('\r\u001b[K')).toBe(true);
    expect(readFileSync(path.join(dir, 'doctor.txt'), 'utf8')).toMatch(/^metal-cap-shim doctor — simulated Metal/);
  });

  it('nothing extra under --json, even on a terminal', () => {
    expect(onTerminal(`${quoted(['doctor', '--json', '--mmap-size', '1M'])} > /dev/null`, env)).toBe('');
  });

  it('nothing extra when stderr is not a terminal', () => {
    const r = runCli(['doctor', '--mmap-size', '1M'], env);
    expect(r.stderr).toBe('');
  });
});

describeSim('snapshot --with-doctor: a recording that doctor --snapshot replays whole', () => {
  beforeAll(requireSimBuild);

  it('the replay finds what the live run found, probe by probe', () => {
    const env = { METAL_CAP_SHIM_SIM_SNAPSHOT: 'github-macos-14-arm64-runner', XDG_CACHE_HOME: dir };
    const recorded = runCli(['snapshot', '--with-doctor', '--mmap-size', '1M', '--label', 'runner with doctor'], env);
    expect(recorded.status, recorded.stderr).toBe(0);
    const file = path.join(dir, 'with-doctor.json');
    writeFileSync(file, recorded.stdout);
    const live = JSON.parse(runCli(['doctor', '--json', '--mmap-size', '1M'], env).stdout) as DoctorReport;
    const replay = JSON.parse(runCli(['doctor', '--json', '--snapshot', file]).stdout) as DoctorReport;
    const statuses = (r: DoctorReport) => r.devices.map((d) => [d.faults, d.probes.map((p) => [p.id, p.status])]);
    expect(statuses(replay)).toEqual(statuses(live));
    expect(replay.devices[0]!.probes.some((p) => p.status === 'not-recorded')).toBe(false);
  });

  it('--allow-above-hardware reaches doctor: the threadgroup probe records what 64 KiB did, not only the 32 KiB proven', () => {
    const env = { METAL_CAP_SHIM_SIM_SNAPSHOT: 'github-macos-14-arm64-runner', XDG_CACHE_HOME: dir };
    const threadgroup = (extra: string[]) => {
      const r = runCli(['snapshot', '--with-doctor', '--mmap-size', '1M', ...extra], env);
      expect(r.status, r.stderr).toBe(0);
      const probe = (
        JSON.parse(r.stdout) as { devices: { doctor: { probes: Record<string, Record<string, unknown>> } }[] }
      ).devices[0]!.doctor.probes['threadgroup-memory']!;
      return [probe.status, probe.provenThreadgroupMemory, probe.acceptedThreadgroupMemory ?? null];
    };
    expect([threadgroup([]), threadgroup(['--allow-above-hardware'])]).toEqual([
      ['pass', 32768, null],
      ['pass', 32768, 65536],
    ]);
  });

  it('without --with-doctor no doctor section is recorded, and doctor flags alone are a usage error', () => {
    const env = { METAL_CAP_SHIM_SIM_SNAPSHOT: STOCK };
    const plain = JSON.parse(runCli(['snapshot'], env).stdout) as { devices: Record<string, unknown>[] };
    expect(plain.devices.map((d) => 'doctor' in d)).toEqual([false]);
    expect(runCli(['snapshot', '--mmap-size', '1M'], env).stderr.split('\n')[0]).toBe(
      'metal-cap-shim: ERR_USAGE: --mmap-file, --mmap-size, --timeout-ms and --allow-above-hardware are doctor settings: give them with --with-doctor',
    );
    expect(runCli(['snapshot', '--allow-above-hardware'], env).stderr.split('\n')[0]).toBe(
      'metal-cap-shim: ERR_USAGE: --mmap-file, --mmap-size, --timeout-ms and --allow-above-hardware are doctor settings: give them with --with-doctor',
    );
  });
});

describeSim('register flushes its error before exiting, through a pipe that is nearly full', () => {
  beforeAll(requireSimBuild);

  it('the whole message arrives though the pipe held 65 500 bytes and its reader waits', () => {
    const prefill = path.join(dir, 'prefill.cjs');
    // 65 500 bytes take a pipe (64 KiB) almost whole: what register writes next does not fit until the reader reads.
    writeFileSync(prefill, "require('node:fs').writeSync(2, 'x'.repeat(65500));\n");
    const register = path.join(dist, 'register.js');
    const env = { ...process.env, METAL_CAP_SHIM_SIM_SNAPSHOT: STOCK, METAL_CAP_SHIM_PROFILE: 'apple99' };
    const direct = spawnSync(process.execPath, ['--import', register, '-e', '0'], { encoding: 'utf8', env });
    expect(direct.status).toBe(1);
    const piped = spawnSync(
      'sh',
      [
        '-c',
        `'${process.execPath}' --require '${prefill}' --import '${register}' -e 0 2>&1 >/dev/null | { sleep 1; wc -c; }`,
      ],
      {
        encoding: 'utf8',
        env,
      },
    );
    expect(Number(piped.stdout.trim())).toBe(65500 + Buffer.byteLength(direct.stderr));
  });
});
