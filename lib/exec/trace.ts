/**
 * `--trace`: the path checked before anything runs, the private folder the processes write their traces into, and
 * the trace file(s) exec writes from it afterwards, never through a path someone else could have planted.
 */
import { accessSync, constants, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { TraceFileError } from '../core/errors.js';
import { checkWriteTarget, readOwnFile, WriteRefusedError, writeTarget, type WriteTarget } from '../core/safefs.js';

/** A --trace file as checked: its folder resolved once, with its device and inode, which every write checks first. */
export type TraceTarget = WriteTarget;

/**
 * Checks a --trace path before anything runs, so that a run is never wasted on a trace that cannot be written: the
 * folder is reached through nothing another user could have planted and we may write in it, and the file is new or a
 * regular file of ours (checkWriteTarget, the rule of every file the tool writes). Returns the target, its folder
 * resolved once; throws ERR_TRACE_FILE.
 */
export function checkTraceFile(file: string): TraceTarget {
  let target: TraceTarget;
  try {
    target = checkWriteTarget(file);
  } catch (e) {
    if (e instanceof WriteRefusedError) throw new TraceFileError(`--trace ${file}: ${e.message}`);
    throw e;
  }
  try {
    accessSync(target.folder, constants.W_OK);
  } catch {
    throw new TraceFileError(`--trace ${file}: the folder ${target.folder} cannot be written`);
  }
  return target;
}

/** The largest trace file exec copies out of its private folder (a trace is a few kilobytes). */
const MAX_TRACE_BYTES = 16 * 1024 * 1024;

/**
 * exec's private folder for the children's traces: mkdtemp makes it, new and 0700, in the temporary folder, so no
 * other user can plant or read anything in it. The injector writes `first.json` (the first process to write, with
 * O_EXCL) or `<pid>.json` there, and exec itself writes the --trace file(s) afterwards.
 */
export function makeTraceFolder(): string {
  try {
    return mkdtempSync(path.join(tmpdir(), 'metal-cap-shim-trace-'));
  } catch (e) {
    throw new TraceFileError(
      `--trace: cannot create a private folder for the traces in ${tmpdir()}: ${(e as Error).message}`,
    );
  }
}

/** The name of a trace the injector wrote: `first.json`, or `<pid>.json` (`<pid>-<n>.json` for a reused pid). */
const TRACE_NAME = /^(first|\d+(?:-\d+)?)\.json$/;

/** The code of an errno-style error, else its message: the short reason an ERR_TRACE_FILE line gives. */
const reasonOf = (e: unknown): string => (e as NodeJS.ErrnoException).code ?? (e as Error).message;

/**
 * Writes the --trace file(s) from what the processes left in exec's private folder: the first process to write takes
 * FILE, each other one FILE.<pid>. When no process wrote one, FILE says so (pid, whether the injector loaded, nothing
 * traced). Each file is written with writeFileSafely(). A folder the program made unreadable (`chmod 000`, as any
 * process of the user's may) writes nothing: whether a process left a trace there is unknown, so FILE cannot say that
 * none did. Never throws; returns the errors to report, each an ERR_TRACE_FILE line.
 */
export function deliverTraces(
  folder: string,
  target: TraceTarget,
  pid: number | undefined,
  injectorLoaded: boolean,
): string[] {
  const file = target.file;
  let names: string[];
  try {
    names = readdirSync(folder)
      .filter((n) => TRACE_NAME.test(n))
      .sort();
  } catch (e) {
    return [
      `ERR_TRACE_FILE cannot write ${file}: the private folder the processes wrote their traces into, ${folder}, cannot be read (${reasonOf(e)})`,
    ];
  }
  const errors: string[] = [];
  if (!names.includes('first.json')) errors.push(...writeTrace(target, emptyTrace(pid, injectorLoaded)));
  for (const name of names) {
    const into = name === 'first.json' ? file : `${file}.${name.slice(0, -'.json'.length)}`;
    const read = readOwnFile(path.join(folder, name), MAX_TRACE_BYTES);
    if (!read.ok) errors.push(`ERR_TRACE_FILE cannot write ${into}: the trace a process left ${read.why}`);
    else errors.push(...writeTrace({ ...target, file: into }, read.text));
  }
  return errors;
}

/**
 * Removes exec's private trace folder. The program may have made it unremovable (`chmod 500` on the folder, as any
 * process of the user's may): then it is left where it is and said, never thrown. Returns the ERR_TRACE_FILE line, or
 * none.
 */
export function removeTraceFolder(folder: string): string[] {
  try {
    rmSync(folder, { recursive: true, force: true });
    return [];
  } catch (e) {
    return [
      `ERR_TRACE_FILE cannot remove the private trace folder ${folder} (${reasonOf(e)}): it is left there; remove it yourself`,
    ];
  }
}

/** The trace of a process that traced nothing: its pid, whether the profile was applied, no classes, no calls. */
export function emptyTrace(pid: number | undefined, profileApplied: boolean): string {
  return `${JSON.stringify({ pid: pid ?? null, profileApplied, patchedClasses: [], trace: [] })}\n`;
}

/**
 * Writes one trace file in the checked folder (writeTarget: once it is seen to be the same folder); returns the
 * injector errors to report: none, or the one ERR_TRACE_FILE.
 */
export function writeTrace(target: TraceTarget, text: string): string[] {
  try {
    writeTarget(target, text);
    return [];
  } catch (e) {
    return [`ERR_TRACE_FILE cannot write ${target.file}: ${(e as Error).message}`];
  }
}
