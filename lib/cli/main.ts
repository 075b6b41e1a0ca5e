import { parseArgs } from 'node:util';
import { EXEC_EXIT, EXIT, EXIT_TABLE, NO_METAL_CODES } from './exit.js';
import type { Command, OptionSpec, Values } from './shared.js';
import { cliWords, offlineHint } from './wording.js';
import { MetalCapShimError, RefusedError, UsageError } from '../core/errors.js';
import { clip } from '../core/input.js';
import { escapeControl, jsonText } from '../core/escape.js';
import { choiceMessage, didYouMean } from '../core/suggest.js';

/** The exit code of an exec that failed before (or instead of) its program: never one the program could give. */
function execFailureCode(code: string | undefined): number {
  if (code === 'ERR_COMMAND_NOT_FOUND') return EXEC_EXIT.notFound;
  if (code === 'ERR_SPAWN') return EXEC_EXIT.notRunnable;
  return EXEC_EXIT.failed;
}

/**
 * Every command: one line for the main help, and its module, loaded only when that command runs (so `probe` never
 * pays for `exec` or the gate tables). Adding a command is one entry here plus one module in lib/cli/.
 */
const COMMANDS: Record<
  string,
  { summary: string; examples: readonly string[]; load: () => Promise<{ default: Command }> }
> = {
  probe: {
    summary: 'what Metal reports here (or in a recorded snapshot)',
    examples: [
      'probe                                          # this machine, the default device',
      'probe --short                                  # one line per device, stock → under the default profile',
      'probe --json --snapshot vz-guest-m1-ultra-tahoe-stock   # a recorded guest, on any OS',
    ],
    load: () => import('./probe.js'),
  },
  audit: {
    summary: 'stock vs a profile: changed answers, engine flags before/after, warnings, verdict',
    examples: [
      'audit                                          # the default profile, applied here, verified, restored',
      'audit --snapshot vz-guest-m1-ultra-tahoe-stock # a recorded stock guest, offline, on any OS',
      'audit --snapshot m1-ultra-bare-metal --profile mask-apple5 --rules b4753',
    ],
    load: () => import('./audit.js'),
  },
  exec: {
    summary: 'run a program with a profile injected into it',
    examples: [
      'exec -- llama-bench -m model.gguf -p 512 -n 128',
      'exec --profile apple9-hw-tg --trace trace.json -- llama-server -m model.gguf',
      'METAL_CAP_SHIM_PROFILE=off metal-cap-shim exec -- llama-server -m model.gguf   # unpatched, said once',
    ],
    load: () => import('./exec.js'),
  },
  bench: {
    summary: 'llama-bench / llama-perplexity stock vs each profile: tokens/s speed-ups, or output fidelity',
    examples: [
      'bench -- llama-bench -m model.gguf -p 512 -n 128',
      'bench --fidelity -- llama-perplexity -m model.gguf -f text.txt',
      'bench --node-llama-cpp --model model.gguf --profile host-family,cua-release',
    ],
    load: () => import('./bench.js'),
  },
  report: {
    summary: 'a field report to attach to an issue',
    examples: [
      'report --json --host-label "M1 Ultra, macOS 26.6.1" > report.json   # on the Mac, to send back',
      'report --snapshot vz-guest-m1-ultra-tahoe-stock --no-doctor          # a recorded guest, on any OS',
    ],
    load: () => import('./report.js'),
  },
  matrix: {
    summary: 'merge field reports into a host × guest OS × profile table',
    examples: ['matrix reports/*.json', 'matrix --svg matrix.svg reports/*.json'],
    load: () => import('./matrix.js'),
  },
  profiles: {
    summary: 'the built-in profiles and why they exist',
    examples: ['profiles', 'profiles --json'],
    load: () => import('./profiles.js'),
  },
  snapshot: {
    summary: 'record this machine as a snapshot (JSON on stdout)',
    examples: [
      'snapshot --label "M1 Ultra guest, Tahoe 26.5.2" > guest.json',
      "snapshot --with-doctor --mmap-size 256M > guest.json   # with doctor's results",
    ],
    load: () => import('./snapshot.js'),
  },
  doctor: {
    summary: 'real Metal work on each device: what is proven, the faults, the verified profile',
    examples: [
      'doctor                                         # every device, stock and under the default profile',
      'doctor --mmap-size 256M --timeout-ms 5000',
      'doctor --snapshot github-macos-14-arm64-runner # a recorded result with a fault, on any OS',
    ],
    load: () => import('./doctor.js'),
  },
};

/** A command's `--help`: its own text, then its examples. */
async function commandHelp(name: string, command: Command): Promise<string> {
  const examples = COMMANDS[name]!.examples.map(
    (e) => `  ${e.startsWith('METAL_CAP_SHIM') ? e : `metal-cap-shim ${e}`}`,
  );
  return `${(await command.help()).trimEnd()}\n\nExamples:\n${examples.join('\n')}`;
}

/** Errors that mean the command line asked for something that does not exist or cannot be read: exit 2. */
const USAGE_CODES = new Set([
  'ERR_USAGE',
  'ERR_INVALID_PROFILE',
  'ERR_INVALID_OPTIONS',
  'ERR_SNAPSHOT_NOT_FOUND',
  'ERR_INVALID_SNAPSHOT',
  'ERR_INVALID_REPORT',
  'ERR_FILE',
  'ERR_TRACE_FILE',
  'ERR_BENCH_NO_NODE_LLAMA_CPP',
]);

/** One line on stderr, control characters escaped (a message quotes input: file names, profiles, commands). */
const err = (s: string) => process.stderr.write(`${escapeControl(s)}\n`);
/** Text of our own (the help) on stderr, as it is. */
const errText = (s: string) => process.stderr.write(`${s}\n`);

async function listSnapshotNames(): Promise<string> {
  const { bundledSnapshotsHelp } = await import('./snapshot-help.js');
  return bundledSnapshotsHelp();
}

async function mainHelp(): Promise<string> {
  const width = Math.max(...Object.keys(COMMANDS).map((c) => c.length));
  return `metal-cap-shim — probe Apple Metal device capabilities and patch them inside one process

Usage: metal-cap-shim <command> [options]

Commands:
${Object.entries(COMMANDS)
  .map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`)
  .join('\n')}

Options: --help (also after a command), --version (also after a command), --json (every command; with
--version, the version as JSON), --color[=auto|always|never] and --no-color (every command; --color alone is
always and --no-color is never, whatever the environment says; auto, the default, follows Node: colour on a
terminal, none with a non-empty NO_COLOR or TERM=dumb; a set FORCE_COLOR wins over those, and FORCE_COLOR=0 or
false turns colour off, on a terminal too)
Exit codes (every command): ${EXIT_TABLE.map((r) => `${r.code} ${r.short}`).join(', ')}.
exec passes its program's code through; its own failures are ${EXEC_EXIT.failed} (${EXEC_EXIT.notRunnable}: the program cannot be run,
${EXEC_EXIT.notFound}: not found).
With --json, a failure is {"error": {"code", "message"}} on stdout (exec: on stderr) and the message on stderr.
A file argument (--snapshot, --profile, matrix's files) can be - for standard input.

${await listSnapshotNames()}`;
}

/**
 * Help on `stream`: reflowed to its width on a terminal (format/wrap.ts), byte for byte what docs/cli.md holds
 * otherwise.
 */
async function writeHelp(stream: NodeJS.WriteStream, text: string): Promise<void> {
  const { terminalWidth, wrapToWidth } = await import('../format/wrap.js');
  stream.write(`${wrapToWidth(text, terminalWidth(stream), { reflow: true })}\n`);
}

/** The package version; with --json, as `{ schema, name, version }`. */
async function printVersion(json: boolean): Promise<void> {
  const { packageVersion } = await import('../device/native.js');
  const version = packageVersion();
  process.stdout.write(
    json
      ? `${JSON.stringify({ schema: 'metal-cap-shim/version@1', name: 'metal-cap-shim', version })}\n`
      : `${version}\n`,
  );
}

/** `--json` given to the command itself (not to the program after exec's `--`). */
function wantsJson(argv: string[]): boolean {
  const dash = argv.indexOf('--');
  return (dash === -1 ? argv : argv.slice(0, dash)).includes('--json');
}

/** The colour modes `--color` takes (format/style.ts COLOR_MODES, spelled here so start-up loads nothing more). */
const COLOR_WORDS: readonly string[] = ['auto', 'always', 'never'];

/** Options every command takes, besides its own. */
const COMMON_OPTIONS: Record<'help' | 'version' | 'color', OptionSpec> = {
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
  color: { type: 'string', choices: COLOR_WORDS },
};

/** What may stand before the command, for "did you mean" there. */
const GLOBAL_WORDS: readonly string[] = ['--help', '--version', '--json', '--color', '--no-color'];

/** The options before the command (`metal-cap-shim --json --version`, `--color never probe`), and the rest. */
function splitGlobals(argv: string[]): { globals: string[]; name: string | undefined; rest: string[] } {
  const globals: string[] = [];
  let i = 0;
  for (; i < argv.length; i++) {
    const word = argv[i]!;
    if (['--json', '--version', '-v', '--help', '-h'].includes(word) || word.startsWith('--color=')) globals.push(word);
    else if (word === '--color' && i + 1 < argv.length) globals.push(word, argv[++i]!);
    else break;
  }
  return { globals, name: argv[i], rest: argv.slice(i + 1) };
}

/**
 * Parses a command's own arguments the same way for every command: `--help`, `--version`, `--color`, every option
 * known and given its value, a string option given twice is an error (the second would silently win otherwise), and
 * `exec`'s program after `--`. Each mistake is one line in the CLI's words (Node's parser text is never shown).
 */
function parseCommand(
  name: string,
  command: Command,
  argv: string[],
): { values: Values; positionals: string[]; rest: string[] } {
  const dash = command.positionals === 'after-dashdash' ? argv.indexOf('--') : -1;
  if (command.positionals === 'after-dashdash' && dash === -1) suggestDashDash(name, command, argv);
  const own = dash === -1 ? argv : argv.slice(0, dash);
  const rest = dash === -1 ? [] : argv.slice(dash + 1);
  const options: Command['options'] = { ...command.options, ...COMMON_OPTIONS };
  const known = Object.keys(options).map((o) => `--${o}`);
  // Not strict: the checks below say what is wrong in our words, and a value such as `-1` is the option's value.
  const parsed = parseArgs({ args: own, options, allowPositionals: true, strict: false, tokens: true });
  const counts = new Map<string, number>();
  for (const t of parsed.tokens ?? []) {
    if (t.kind === 'positional') {
      if (command.positionals !== 'files') {
        throw new UsageError(
          `unexpected argument '${clip(t.value, 80)}': ${name} takes options only${dash === -1 ? '' : ' before `--`'}`,
        );
      }
      continue;
    }
    if (t.kind !== 'option') continue;
    const spec = Object.hasOwn(options, t.name) ? options[t.name] : undefined;
    if (spec === undefined)
      throw new UsageError(`unknown option '${clip(t.rawName, 80)}'${didYouMean(t.rawName, known)}`);
    if (spec.type === 'boolean' && t.value !== undefined)
      throw new UsageError(`${t.rawName} takes no value, got '${clip(t.value, 80)}'`);
    if (spec.type === 'string') {
      if (t.value === undefined) throw new UsageError(`${t.rawName} needs a value`);
      if (!t.inlineValue && t.value.startsWith('--')) {
        throw new UsageError(
          `${t.rawName} needs a value, but is followed by the option ${clip(t.value, 80)} (write ${t.rawName}=VALUE for a value that starts with --)`,
        );
      }
      if (spec.choices !== undefined && !spec.choices.includes(t.value))
        throw new UsageError(choiceMessage(`--${t.name}`, t.value, spec.choices));
    }
    counts.set(t.name, (counts.get(t.name) ?? 0) + 1);
  }
  const values = parsed.values as Values;
  if (values.help || values.version) return { values, positionals: [], rest };
  for (const [option, n] of counts) {
    const spec = options[option] as { type: string; multiple?: boolean } | undefined;
    if (n > 1 && spec?.type === 'string' && !spec.multiple)
      throw new UsageError(`--${option} is given ${n} times; give it once`);
  }
  if (command.positionals === 'after-dashdash') {
    const noProgram = command.noProgramWith !== undefined && values[command.noProgramWith] === true;
    if (noProgram && dash !== -1)
      throw new UsageError(`--${command.noProgramWith} runs no program: drop \`--\` and what follows it`);
    if (rest.length === 0 && !noProgram)
      throw new UsageError(`${name} needs a program after \`--\`: metal-cap-shim ${name} [options] -- program [args…]`);
  }
  return { values, positionals: parsed.positionals, rest };
}

/**
 * `exec llama-bench -m model`: the program was given without `--`, so its options would be read as ours. Finds the
 * first word that is neither an option of the command nor an option's value, and suggests the command line with `--`.
 */
function suggestDashDash(name: string, command: Command, argv: string[]): void {
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!;
    if (word.startsWith('-')) {
      const option =
        command.options[word.replace(/^--?/, '')] ?? (word === '--color' ? COMMON_OPTIONS.color : undefined);
      if (option?.type === 'string' && !word.includes('=')) i++;
      continue;
    }
    const before = argv.slice(0, i);
    throw new UsageError(
      `put \`--\` before the program, so that its options are not read as ${name}'s: metal-cap-shim ${[name, ...before, '--', ...argv.slice(i)].join(' ')}`,
    );
  }
}

/** Sets `--color` (from before or after the command, its value checked by parseCommand) for the command's output. */
async function applyColor(value: string | boolean | string[] | undefined): Promise<void> {
  if (typeof value !== 'string') return;
  const { setColorMode } = await import('./shared.js');
  setColorMode(value as 'auto' | 'always' | 'never');
}

/** Runs the CLI with `argv` (without node and script) and returns the exit code. */
/** The options that read a file, where `-` means standard input. */
const FILE_OPTIONS = ['snapshot', 'profile', 'mmap-file'] as const;

/** Standard input can be read once: two options asking for it is a usage error, not the second one's bad JSON. */
function checkOneStdin(values: Record<string, unknown>): void {
  const asking = FILE_OPTIONS.filter((o) => typeof values[o] === 'string' && (values[o] as string).trim() === '-');
  if (asking.length > 1) {
    throw new UsageError(
      `only one input can be standard input: ${asking.map((o) => `--${o}`).join(' and ')} both read -; give the others as files`,
    );
  }
}

/**
 * `--color` alone means `--color=always` and `--no-color` means `--color=never`, as in Node's own tools and most
 * CLIs; only before `--` (what follows is exec's program's).
 */
export function colorArgs(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') return [...out, ...argv.slice(i)];
    if (a === '--no-color') out.push('--color=never');
    else if (a === '--color' && !COLOR_WORDS.includes(argv[i + 1] ?? '')) out.push('--color=always');
    else out.push(a);
  }
  return out;
}

/** `unknown command 'audti' (did you mean 'audit'?)`, or an unknown option before the command, with "did you mean". */
function unknownCommand(word: string): UsageError {
  const what = word.startsWith('-')
    ? `unknown option '${clip(word, 80)}' before the command${didYouMean(word.split('=')[0]!, GLOBAL_WORDS)}`
    : `unknown command '${clip(word, 80)}'${didYouMean(word, Object.keys(COMMANDS))}`;
  return new UsageError(`${what}; commands: ${Object.keys(COMMANDS).join(', ')}`);
}

/** The `--color` mode the command line asks for (the last one given before `--`), for the error line. */
function colorModeOf(argv: readonly string[]): 'auto' | 'always' | 'never' {
  let mode: 'auto' | 'always' | 'never' = 'auto';
  const args = colorArgs(argv);
  for (let i = 0; i < args.length && args[i] !== '--'; i++) {
    const value = args[i]!.startsWith('--color=') ? args[i]!.slice(8) : args[i] === '--color' ? args[i + 1] : undefined;
    if (value !== undefined && COLOR_WORDS.includes(value)) mode = value as typeof mode;
  }
  return mode;
}

/** An error's message as the CLI shows it: in the words of the command that ran, with its options and no API names. */
function messageFor(name: string | undefined, command: Command | undefined, e: MetalCapShimError): string {
  if (name === undefined || command === undefined) return e.message;
  const message = cliWords(e.message, name, Object.keys(command.options));
  return NO_METAL_CODES.has(e.code) ? `${message}${offlineHint(name, Object.keys(command.options))}` : message;
}

export async function main(argv: string[]): Promise<number> {
  const { globals, name, rest } = splitGlobals(colorArgs(argv));
  const has = (...flags: string[]) => flags.some((f) => globals.includes(f));
  let command: Command | undefined;
  let hint = 'metal-cap-shim --help';
  try {
    if (name === undefined || name === 'help') {
      const topic = name === 'help' && rest[0] !== undefined ? rest[0] : undefined;
      if (topic !== undefined && !Object.hasOwn(COMMANDS, topic)) throw unknownCommand(topic);
      if (name === undefined && has('--version', '-v')) {
        await printVersion(has('--json'));
        return EXIT.ok;
      }
      if (name === undefined && !has('--help', '-h')) {
        await writeHelp(process.stderr, await mainHelp());
        return EXIT.usage;
      }
      const text = topic ? await commandHelp(topic, (await COMMANDS[topic]!.load()).default) : await mainHelp();
      await writeHelp(process.stdout, text);
      return EXIT.ok;
    }
    const entry = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
    if (!entry) throw unknownCommand(name);
    hint = `metal-cap-shim ${name} --help`;
    command = (await entry.load()).default;
    const invocation = parseCommand(name, command, [...globals, ...rest]);
    await applyColor(invocation.values.color);
    if (invocation.values.help) {
      await writeHelp(process.stdout, await commandHelp(name, command));
      return EXIT.ok;
    }
    if (invocation.values.version) {
      await printVersion(invocation.values.json === true);
      return EXIT.ok;
    }
    checkOneStdin(invocation.values);
    return await command.run(invocation);
  } catch (e) {
    if (!(e instanceof MetalCapShimError)) throw e;
    // One line on stderr, in the words of the command that ran (coloured as --color and the environment say), and for
    // a usage error a second saying where the usage is. With --json a script also gets the error as JSON: on stdout,
    // except for exec, whose stdout belongs to the program.
    const message = messageFor(name, command, e);
    const { stylerFor } = await import('../format/style.js');
    const style = stylerFor(process.stderr, process.env, colorModeOf(argv));
    errText(`${style.bad(`metal-cap-shim: ${e.code}:`)} ${escapeControl(message)}`);
    if (e.code === 'ERR_USAGE') errText(`Run \`${hint}\` for usage.`);
    if (has('--json') || wantsJson(rest)) {
      const line = jsonText({ error: { code: e.code, message } });
      if (name === 'exec') err(line);
      else process.stdout.write(`${line}\n`);
    }
    if (name === 'exec') return execFailureCode(e.code);
    // A program bench runs that is missing or cannot run: the shell's codes, as exec gives them.
    if (e.code === 'ERR_COMMAND_NOT_FOUND') return EXIT.notFound;
    if (e.code === 'ERR_SPAWN') return EXIT.notRunnable;
    if (USAGE_CODES.has(e.code)) return EXIT.usage;
    if (e instanceof RefusedError) return EXIT.refused;
    if (NO_METAL_CODES.has(e.code)) return EXIT.noMetal;
    return EXIT.finding;
  }
}

let stdoutClosed = false;
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (stdoutClosed) return;
  stdoutClosed = true;
  // The reader has gone (`| head`): it has what it wanted. The command ends as it would have, quietly, like cat.
  if (e.code === 'EPIPE') return;
  // A full disk (or another write error) loses output: one line and exit 1, not an unhandled 'error' and a stack trace.
  err(
    `metal-cap-shim: cannot write to stdout: ${e.code === 'ENOSPC' ? 'no space left on the device' : e.message} (${e.code ?? 'error'})`,
  );
  process.exit(EXIT.finding);
});

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    err(`metal-cap-shim: internal error: ${e instanceof Error ? (e.stack ?? e.message).split('\n')[0] : String(e)}`);
    if (e instanceof Error && e.stack) errText(e.stack.split('\n').slice(1).join('\n'));
    process.exitCode = process.argv[2] === 'exec' ? execFailureCode(undefined) : EXIT.finding;
  },
);
