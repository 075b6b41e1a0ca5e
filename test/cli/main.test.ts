// One voice for every command (lib/cli/main.ts): every failure is one line on stderr, `metal-cap-shim: CODE: message`
// (a usage error adds the line naming the command's help), nothing on stdout, and with --json the same code and
// message as JSON on stdout (exec: on stderr, its stdout being the program's). "No Metal here" is such a failure for
// every command, probe and doctor included. Every option and every value of an option with a closed list has "did you
// mean", before the command and after it; hints name the command that ran; errors are coloured as --color says.
import { describe, expect, it } from 'vitest';
import { EXIT, EXEC_EXIT } from '../../lib/cli/exit.js';
import type { Command } from '../../lib/cli/shared.js';
import { hasScript, runCli, runCliOnTerminal } from '../support/helpers.js';

const NO_SIM = { METAL_CAP_SHIM_SIM_SNAPSHOT: undefined };
const GUEST = 'vz-guest-m1-ultra-tahoe-stock';
const BARE = 'm1-ultra-bare-metal';

/** Every command's module, as lib/cli/main.ts loads it. */
const COMMANDS: Record<string, Command> = Object.fromEntries(
  await Promise.all(
    ['probe', 'audit', 'exec', 'bench', 'report', 'matrix', 'profiles', 'snapshot', 'doctor'].map(
      async (name) => [name, (await import(`../../lib/cli/${name}.ts`)).default as Command] as const,
    ),
  ),
);

/** Runs a failing command line and checks the one shape; returns the code and the message. */
function failure(args: string[], env: NodeJS.ProcessEnv = {}): { code: string; message: string; status: number } {
  // The command whose help the usage line names: the first word, after the options that may precede it.
  const name = args.find((a) => a !== '--json' && !a.startsWith('--color='));
  const command = name !== undefined && name in COMMANDS ? name : undefined;
  const plain = runCli(args, env);
  const lines = plain.stderr.split('\n');
  expect(lines.at(-1), plain.stderr).toBe('');
  const m = /^metal-cap-shim: (ERR_[A-Z_]+): (\S.*)$/.exec(lines[0]!);
  expect(m, plain.stderr).not.toBeNull();
  const [, code, message] = m!;
  const usage = code === 'ERR_USAGE' ? [`Run \`metal-cap-shim ${command ? `${command} ` : ''}--help\` for usage.`] : [];
  expect(lines.slice(1, -1)).toEqual(usage);
  expect(plain.stdout).toBe('');

  const dash = args.includes('--') ? args.indexOf('--') : args.length;
  const json = runCli([...args.slice(0, dash), '--json', ...args.slice(dash)], env);
  const exec = command === 'exec';
  const jsonLines = (exec ? json.stderr : json.stdout).split('\n').filter(Boolean);
  expect(JSON.parse(jsonLines.at(-1)!)).toEqual({ error: { code, message } });
  expect(json.stderr.split('\n')[0]).toBe(lines[0]);
  if (!exec) expect(jsonLines).toHaveLength(1);
  expect(json.status).toBe(plain.status);
  return { code: code!, message: message!, status: plain.status! };
}

describe('every command fails in one shape', () => {
  it.each([
    ['probe', ['probe', '--frobnicate']],
    ['audit', ['audit', '--frobnicate']],
    ['exec', ['exec', '--frobnicate', '--', 'true']],
    ['bench', ['bench', '--frobnicate', '--', 'true']],
    ['report', ['report', '--frobnicate']],
    ['matrix', ['matrix', '--frobnicate']],
    ['profiles', ['profiles', '--frobnicate']],
    ['snapshot', ['snapshot', '--frobnicate']],
    ['doctor', ['doctor', '--frobnicate']],
  ])('%s: an unknown option is a usage error', (name, args) => {
    expect(failure(args)).toEqual({
      code: 'ERR_USAGE',
      message: "unknown option '--frobnicate'",
      status: name === 'exec' ? EXEC_EXIT.failed : EXIT.usage,
    });
  });

  // What every command that asks Metal says where there is none: the same code, the reason, and the same command on a
  // recorded snapshot where the command takes one.
  const NOT_MACOS = `Metal exists only on macOS; this is ${process.platform}`;
  it.each<[string, string[], string]>([
    ['probe', ['probe'], `${NOT_MACOS}. Offline, on any OS: metal-cap-shim probe --snapshot ${GUEST}`],
    ['audit', ['audit'], `${NOT_MACOS}. Offline, on any OS: metal-cap-shim audit --snapshot ${GUEST}`],
    ['report', ['report'], `${NOT_MACOS}. Offline, on any OS: metal-cap-shim report --snapshot ${GUEST} --no-doctor`],
    [
      'doctor',
      ['doctor'],
      `${NOT_MACOS}. Offline, on any OS: metal-cap-shim doctor --snapshot github-macos-14-arm64-runner`,
    ],
    ['snapshot', ['snapshot'], `${NOT_MACOS}: there is no Metal device here to record`],
    [
      'bench',
      ['bench', '--', 'echo'],
      `bench injects into programs that use Metal, which exists only on macOS; this is ${process.platform}`,
    ],
    [
      'exec',
      ['exec', '--', 'true'],
      `exec injects into programs that use Metal, which exists only on macOS; this is ${process.platform} (--allow-unpatched runs the program unpatched)`,
    ],
  ])('%s with no Metal: one line naming the command that ran and its own options', (name, args, message) => {
    expect(failure(args, NO_SIM)).toEqual({
      code: 'ERR_UNSUPPORTED_PLATFORM',
      message,
      status: name === 'exec' ? EXEC_EXIT.failed : EXIT.noMetal,
    });
  });

  it('doctor --device speaks of the flag, not the API option behind it', () => {
    expect(failure(['doctor', '--snapshot', BARE, '--device', '5'])).toEqual({
      code: 'ERR_INVALID_OPTIONS',
      message: `--device: snapshot ${BARE} has no device 5; it records 1 (0–0)`,
      status: EXIT.usage,
    });
  });

  it('--profile off says how to turn the shim off, in every command that takes --profile', () => {
    const message =
      "'off' is no profile: to run unpatched, leave the shim out, or set METAL_CAP_SHIM_PROFILE=off where it is applied by itself (exec without --profile, metal-cap-shim/register)";
    expect(failure(['exec', '--profile', 'off', '--', 'true'], NO_SIM)).toEqual({
      code: 'ERR_INVALID_PROFILE',
      message,
      status: EXEC_EXIT.failed,
    });
    expect(failure(['audit', '--snapshot', GUEST, '--profile', 'OFF'])).toEqual({
      code: 'ERR_INVALID_PROFILE',
      message: message.replace("'off'", "'OFF'"),
      status: EXIT.usage,
    });
  });
});

describe('did you mean, for every option and every value of a closed list', () => {
  it.each([
    [['--verison'], "unknown option '--verison' before the command (did you mean '--version'?)"],
    [['--hlep'], "unknown option '--hlep' before the command (did you mean '--help'?)"],
    [['--jsn', 'probe'], "unknown option '--jsn' before the command (did you mean '--json'?)"],
    [['--colour=never', 'probe'], "unknown option '--colour=never' before the command (did you mean '--color'?)"],
    [['help', 'audti'], "unknown command 'audti' (did you mean 'audit'?)"],
  ])('before the command: %j', (args, start) => {
    const { code, message } = failure(args);
    expect([code, message]).toEqual([
      'ERR_USAGE',
      `${start}; commands: probe, audit, exec, bench, report, matrix, profiles, snapshot, doctor`,
    ]);
  });

  it.each(Object.keys(COMMANDS))('%s: every option of its own and every common one, mistyped', (name) => {
    const options = [...Object.keys(COMMANDS[name]!.options), 'help', 'version', 'color'];
    const tail = name === 'exec' || name === 'bench' ? ['--', 'true'] : [];
    for (const option of options) {
      // One letter doubled: one edit from the option, and from no other.
      const typo = `--${option}${option.at(-1)}`;
      const r = runCli([name, typo, ...tail]);
      expect([typo, r.stderr.split('\n')[0]]).toEqual([
        typo,
        `metal-cap-shim: ERR_USAGE: unknown option '${typo}' (did you mean '--${option}'?)`,
      ]);
    }
  });

  it.each(
    Object.entries(COMMANDS).flatMap(([name, command]) =>
      [...Object.entries(command.options), ['color', { choices: ['auto', 'always', 'never'] }] as const]
        .filter(([, spec]) => spec.choices !== undefined)
        .flatMap(([option, spec]) => spec.choices!.map((value) => [name, option, value] as const)),
    ),
  )('%s --%s: a mistyped %s is refused naming the values and the one meant', (name, option, value) => {
    const typo = value.length > 3 ? value.slice(0, -1) : `${value}${value.at(-1)}`;
    const tail = name === 'exec' || name === 'bench' ? ['--', 'true'] : [];
    const r = runCli([name, `--${option}=${typo}`, ...tail]);
    expect(r.stderr.split('\n')[0]).toMatch(
      new RegExp(
        `^metal-cap-shim: ERR_USAGE: --${option} takes .+, got '${typo.replace('.', '\\.')}' \\(did you mean '${value.replace('.', '\\.')}'\\?\\)$`,
      ),
    );
  });

  it('the values the CLI lists: --engine, --color and --rules', () => {
    expect(failure(['audit', '--engine', 'llama']).message).toBe(
      "--engine takes llama.cpp, mlx, ollama or all, got 'llama' (did you mean 'ollama'?)",
    );
    expect(failure(['probe', '--color=sometimes']).message).toBe(
      "--color takes auto, always or never, got 'sometimes'",
    );
    expect(failure(['--color=sometimes', 'probe']).message).toBe(
      "--color takes auto, always or never, got 'sometimes'",
    );
    expect(failure(['audit', '--rules', 'curent']).message).toBe(
      "--rules takes legacy-b0, legacy-b1853, legacy-b4040, legacy-b4053, legacy, device-b6501, device-b6968, device-b7010, device-b7411, device, chip-tuning or current, or a llama.cpp release like b4753 or v0.4.0, got 'curent' (did you mean 'current'?)",
    );
  });
});

describe('errors are coloured as --color and the environment say', () => {
  const RED = '\x1b[31mmetal-cap-shim: ERR_USAGE:\x1b[39m ';
  it.skipIf(!hasScript)(
    'on a terminal, with no --color and no NO_COLOR or FORCE_COLOR: red; NO_COLOR there: plain',
    () => {
      const tty = runCliOnTerminal(100, ['probe', '--nope'], {});
      expect([tty.status, tty.output.startsWith(RED)]).toEqual([EXIT.usage, true]);
      const plain = runCliOnTerminal(100, ['probe', '--nope'], { NO_COLOR: '1' });
      expect([plain.status, plain.output.startsWith('metal-cap-shim: ERR_USAGE: ')]).toEqual([EXIT.usage, true]);
    },
  );
  it.each<[string, string[], NodeJS.ProcessEnv, boolean]>([
    ['FORCE_COLOR=1', ['probe', '--nope'], { FORCE_COLOR: '1' }, true],
    ['NO_COLOR (a pipe, as here)', ['probe', '--nope'], { NO_COLOR: '1' }, false],
    ['--color after the command, over NO_COLOR', ['probe', '--nope', '--color'], { NO_COLOR: '1' }, true],
    ['--color=always before the command', ['--color=always', 'probe', '--nope'], {}, true],
    ['--no-color over FORCE_COLOR', ['probe', '--nope', '--no-color'], { FORCE_COLOR: '1' }, false],
    ['FORCE_COLOR=0', ['probe', '--nope'], { FORCE_COLOR: '0' }, false],
  ])('%s', (_what, args, env, coloured) => {
    const r = runCli(args, { FORCE_COLOR: undefined, ...env });
    expect(r.stderr.split('\n')[0]).toBe(`${coloured ? RED : 'metal-cap-shim: ERR_USAGE: '}unknown option '--nope'`);
  });

  it('a control character in what the error quotes stays escaped, coloured or not', () => {
    const r = runCli(['probe', '--snapshot', 'a\x1b[2Jb'], { FORCE_COLOR: '1' });
    expect(r.stderr.split('\n')[0]).toMatch(
      /^\x1b\[31mmetal-cap-shim: ERR_SNAPSHOT_NOT_FOUND:\x1b\[39m .*a\\u001b\[2Jb/,
    );
  });
});

describe('--help', () => {
  it.each(Object.keys(COMMANDS))('%s ends with examples of the command', (name) => {
    const r = runCli([name, '--help']);
    expect(r.status).toBe(0);
    const examples = r.stdout
      .slice(r.stdout.lastIndexOf('\nExamples:\n') + 1)
      .trimEnd()
      .split('\n');
    expect(examples[0]).toBe('Examples:');
    expect(examples.length).toBeGreaterThanOrEqual(3);
    for (const line of examples.slice(1))
      expect(line).toMatch(new RegExp(`^  (METAL_CAP_SHIM_PROFILE=off )?metal-cap-shim ${name}\\b`));
    expect(runCli(['help', name]).stdout).toBe(r.stdout);
  });
});
