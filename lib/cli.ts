import { parseArgs } from 'node:util';
import type { Command, Values } from './cli/shared.js';
import { MetalCapShimError, UsageError } from './errors.js';

/** Exit codes, as documented in the README. */
const EXIT = { ok: 0, failure: 1, usage: 2, refused: 3 } as const;

/**
 * exec's own exit codes, as env(1), timeout(1) and nice(1) have them, so that they cannot be mistaken for the
 * program's: 125 exec itself failed, 126 the program is there but cannot be run, 127 it is not found.
 */
const EXEC_EXIT = { failed: 125, notRunnable: 126, notFound: 127 } as const;

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
const COMMANDS: Record<string, { summary: string; load: () => Promise<{ default: Command }> }> = {
  probe: { summary: 'what Metal reports here (or in a recorded snapshot)', load: () => import('./cli/probe.js') },
  audit: { summary: 'stock vs a profile: changed answers, engine flags before/after, warnings, verdict', load: () => import('./cli/audit.js') },
  exec: { summary: 'run a program with a profile injected into it', load: () => import('./cli/exec.js') },
  report: { summary: 'a field report to attach to an issue', load: () => import('./cli/report.js') },
  matrix: { summary: 'merge field reports into a host × guest OS × profile table', load: () => import('./cli/matrix.js') },
  profiles: { summary: 'the built-in profiles and why they exist', load: () => import('./cli/profiles.js') },
  snapshot: { summary: 'record this machine as a snapshot (JSON on stdout)', load: () => import('./cli/snapshot.js') },
  doctor: {
    summary: 'real Metal work on each device: what is proven, the faults, the verified profile',
    load: () => import('./cli/doctor.js'),
  },
};

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
]);

const err = (s: string) => process.stderr.write(`${s}\n`);

async function listSnapshotNames(): Promise<string> {
  const { bundledSnapshotsHelp } = await import('./cli/snapshot-help.js');
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

Options: --help (also after a command), --version (also after a command), --json (every command)
Exit codes: 0 ok, 1 failure, 2 usage, 3 refused; exec passes its program's code through, and its own
failures are 125 (126: the program cannot be run, 127: not found).
With --json, a failure is {"error": {"code", "message"}} on stdout (exec: on stderr) and the message on stderr.

${await listSnapshotNames()}`;
}

async function version(): Promise<string> {
  const { packageVersion } = await import('./native.js');
  return packageVersion();
}

/** `--json` given to the command itself (not to the program after exec's `--`). */
function wantsJson(argv: string[]): boolean {
  const dash = argv.indexOf('--');
  return (dash === -1 ? argv : argv.slice(0, dash)).includes('--json');
}

/**
 * Parses a command's own arguments the same way for every command: `--help`, `--version`, strict options, a string
 * option given twice is an error (the second would silently win otherwise), and `exec`'s program after `--`.
 */
function parseCommand(name: string, command: Command, argv: string[]): { values: Values; positionals: string[]; rest: string[] } {
  const dash = command.positionals === 'after-dashdash' ? argv.indexOf('--') : -1;
  if (command.positionals === 'after-dashdash' && dash === -1) suggestDashDash(name, command, argv);
  const own = dash === -1 ? argv : argv.slice(0, dash);
  const rest = dash === -1 ? [] : argv.slice(dash + 1);
  const options = { ...command.options, help: { type: 'boolean' as const, short: 'h' }, version: { type: 'boolean' as const } };
  let parsed;
  try {
    parsed = parseArgs({ args: own, options, allowPositionals: command.positionals !== undefined, strict: true, tokens: true });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const values = parsed.values as Values;
  if (values.help || values.version) return { values, positionals: [], rest };
  const counts = new Map<string, number>();
  for (const t of parsed.tokens ?? []) if (t.kind === 'option') counts.set(t.name, (counts.get(t.name) ?? 0) + 1);
  for (const [option, n] of counts) {
    const spec = options[option as keyof typeof options] as { type: string; multiple?: boolean } | undefined;
    if (n > 1 && spec?.type === 'string' && !spec.multiple) throw new UsageError(`--${option} is given ${n} times; give it once`);
  }
  if (command.positionals === 'after-dashdash') {
    if (rest.length === 0) throw new UsageError(`${name} needs a program after \`--\`: metal-cap-shim ${name} [options] -- program [args…]`);
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
      const option = command.options[word.replace(/^--?/, '')];
      if (option?.type === 'string' && !word.includes('=')) i++;
      continue;
    }
    const before = argv.slice(0, i);
    throw new UsageError(
      `put \`--\` before the program, so that its options are not read as ${name}'s: metal-cap-shim ${[name, ...before, '--', ...argv.slice(i)].join(' ')}`,
    );
  }
}

/** Runs the CLI with `argv` (without node and script) and returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  let command: Command | undefined;
  try {
    if (name === undefined) {
      err(await mainHelp());
      return EXIT.usage;
    }
    if (name === '--help' || name === '-h' || name === 'help') {
      const topic = rest[0] !== undefined ? COMMANDS[rest[0]] : undefined;
      process.stdout.write(`${topic ? (await topic.load()).default.help() : await mainHelp()}\n`);
      return EXIT.ok;
    }
    if (name === '--version' || name === '-v') {
      process.stdout.write(`${await version()}\n`);
      return EXIT.ok;
    }
    const entry = Object.prototype.hasOwnProperty.call(COMMANDS, name) ? COMMANDS[name] : undefined;
    if (!entry) throw new UsageError(`unknown command '${name}'; commands: ${Object.keys(COMMANDS).join(', ')}`);
    command = (await entry.load()).default;
    const invocation = parseCommand(name, command, rest);
    if (invocation.values.help) {
      process.stdout.write(`${command.help()}\n`);
      return EXIT.ok;
    }
    if (invocation.values.version) {
      process.stdout.write(`${await version()}\n`);
      return EXIT.ok;
    }
    return await command.run(invocation);
  } catch (e) {
    if (!(e instanceof MetalCapShimError)) throw e;
    // The human line always goes to stderr; usage errors add the command's usage. With --json a script also gets
    // the error as JSON: on stdout, except for exec, whose stdout belongs to the program.
    const usage = e.code === 'ERR_USAGE' ? `\n\n${command ? command.help() : await mainHelp()}` : '';
    err(`metal-cap-shim: ${e.code}: ${e.message}${usage}`);
    if (wantsJson(rest)) {
      const line = JSON.stringify({ error: { code: e.code, message: e.message } });
      if (name === 'exec') err(line);
      else process.stdout.write(`${line}\n`);
    }
    if (name === 'exec') return execFailureCode(e.code);
    if (USAGE_CODES.has(e.code)) return EXIT.usage;
    if (e.code === 'ERR_REFUSED_BARE_METAL' || e.code === 'ERR_INJECTION_BLOCKED') return EXIT.refused;
    return EXIT.failure;
  }
}

let stdoutFailed = false;
// A full disk or a closed pipe on stdout is one line and exit 1, not an unhandled 'error' event and a stack trace.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (stdoutFailed) return;
  stdoutFailed = true;
  const why = e.code === 'EPIPE' ? 'the reader closed the pipe' : e.code === 'ENOSPC' ? 'no space left on the device' : e.message;
  err(`metal-cap-shim: cannot write to stdout: ${why} (${e.code ?? 'error'})`);
  process.exit(EXIT.failure);
});

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    err(`metal-cap-shim: internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    process.exitCode = process.argv[2] === 'exec' ? execFailureCode(undefined) : EXIT.failure;
  },
);
