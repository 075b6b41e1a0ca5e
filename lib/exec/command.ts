/**
 * The program exec runs: found the way the platform's loader finds it (PATH, and PATHEXT on Windows), and the error
 * when it is not there or cannot be run. exec starts the file found here, so PATH is searched once.
 */
import { accessSync, constants, statSync, type Stats } from 'node:fs';
import path from 'node:path';
import { SpawnError } from '../core/errors.js';

/** The variable named `name` in `env`: on win32 the first whose name matches in any case (Windows spells it `Path`). */
function envValue(env: NodeJS.ProcessEnv, name: string, platform: NodeJS.Platform): string | undefined {
  if (platform !== 'win32') return env[name];
  return Object.entries(env).find(([k]) => k.toUpperCase() === name)?.[1];
}

/** What Windows takes for a program when PATHEXT is not set. */
const DEFAULT_PATHEXT = '.COM;.EXE;.BAT;.CMD';

/**
 * The names a command may have on disk: on Windows, a name without one of PATHEXT's extensions (in any case) with
 * each of them in PATHEXT's order (`node` is `node.EXE`); elsewhere, and for a name that has one, itself.
 */
function commandSpellings(command: string, env: NodeJS.ProcessEnv, platform: NodeJS.Platform): string[] {
  if (platform !== 'win32') return [command];
  const extensions = (envValue(env, 'PATHEXT', platform) ?? DEFAULT_PATHEXT).split(';').filter(Boolean);
  const upper = command.toUpperCase();
  return extensions.some((e) => upper.endsWith(e.toUpperCase())) ? [command] : extensions.map((e) => `${command}${e}`);
}

/**
 * Resolves a command the way the platform's loader would: a path as given (made absolute), else the first match on
 * PATH. Elsewhere than Windows, as execvp: '/' makes a path, and a match must be an executable file. On Windows, a backslash
 * and '/' both make a path, PATH is split on ';', and PATHEXT's extensions are tried (commandSpellings); a match need
 * only be a file, as Windows has no execute bit. An empty PATH entry is skipped on every platform, so exec never runs
 * a program from the current folder by accident. `platform` and `env` exist for tests: the files are looked for on
 * this machine's file system, whatever `platform` says.
 */
export function resolveCommand(
  command: string,
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
): string | null {
  const windows = platform === 'win32';
  const isProgram = (file: string) => {
    try {
      if (!statSync(file).isFile()) return false;
      if (!windows) accessSync(file, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  const found = commandCandidates(command, env, platform).find(isProgram);
  return found === undefined ? null : path.resolve(found);
}

/**
 * Where a command may be, in the order it is looked for: the path itself when it is one, else each spelling in each
 * non-empty PATH entry (an empty entry is never taken for the current folder).
 */
function commandCandidates(command: string, env: NodeJS.ProcessEnv, platform: NodeJS.Platform): string[] {
  // An empty name names nothing: joined to a PATH entry it would be the folder itself.
  if (command === '') return [];
  const windows = platform === 'win32';
  const spellings = commandSpellings(command, env, platform);
  if (windows ? /[\\/]/.test(command) : command.includes('/')) return spellings;
  const delimiter = windows ? path.win32.delimiter : path.posix.delimiter;
  const dirs = (envValue(env, 'PATH', platform) ?? '').split(delimiter).filter((dir) => dir !== '');
  return dirs.flatMap((dir) => spellings.map((s) => path.join(dir, s)));
}

/**
 * The error for a command resolveCommand() did not find: ERR_SPAWN (exit 126) when something of that name is there but
 * cannot be run (a folder, a file without execute permission), as execvp's EACCES; otherwise ERR_COMMAND_NOT_FOUND
 * (exit 127).
 */
export function commandError(
  command: string,
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
): SpawnError {
  // In every folder `.` and `..` name that folder and its parent: no PATH entry holds a program of that name.
  if (command === '.' || command === '..')
    return new SpawnError(
      'ERR_SPAWN',
      `cannot run ${command}: it names a folder (the current one or its parent), not a program`,
    );
  for (const candidate of commandCandidates(command, env, platform)) {
    let stats: Stats;
    try {
      stats = statSync(candidate);
    } catch {
      continue;
    }
    const why = stats.isDirectory() ? 'is a folder' : stats.isFile() ? 'is not executable' : 'is not a file';
    return new SpawnError('ERR_SPAWN', `cannot run ${command}: ${path.resolve(candidate)} ${why}`);
  }
  return new SpawnError(
    'ERR_COMMAND_NOT_FOUND',
    command === '' ? 'command not found: the program name is empty' : `command not found: ${command}`,
  );
}
