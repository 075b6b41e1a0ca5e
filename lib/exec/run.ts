/**
 * Runs the program exec prepared: with the injector preloaded and the status pipe open, or unpatched; signals passed
 * on; what the injector reported and the --trace file(s) collected when it exits.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import type { ApplyWarning } from '../patch/apply.js';
import { mlxArchitectureEnv } from '../patch/plan.js';
import { offeredMlxArchitecture } from '../patch/profiles.js';
import { SpawnError } from '../core/errors.js';
import { loadNative } from '../device/native.js';
import { commandError, resolveCommand } from './command.js';
import { childDescriptors } from './descriptors.js';
import {
  childEnvironment,
  parseInjectorStatus,
  STATUS_LIMIT_BYTES,
  statusCollector,
  type InjectorStatus,
} from './injector.js';
import type { ExecOptions } from './prepare.js';
import { FORWARDED_SIGNALS, processGroupsWithoutAddon, shouldForwardSignal } from './signals.js';
import { checkTraceFile, deliverTraces, emptyTrace, makeTraceFolder, removeTraceFolder, writeTrace } from './trace.js';

/** How the child ended and what the injector reported. */
export interface ExecOutcome extends InjectorStatus {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  warnings: ApplyWarning[];
  /** The MLX_METAL_GPU_ARCH exec set for the program (the profile's offer), or null: none set (none offered, the
   * user's own value kept, or the program ran unpatched). */
  mlxArchitecture: string | null;
}

/** The error for a program that could not be started: ERR_COMMAND_NOT_FOUND when it is not there, else ERR_SPAWN. */
function spawnFailure(command: string, err: NodeJS.ErrnoException): SpawnError {
  return new SpawnError(
    err.code === 'ENOENT' ? 'ERR_COMMAND_NOT_FOUND' : 'ERR_SPAWN',
    `cannot run ${command}: ${err.message}`,
  );
}

/**
 * The file to start: the one prepareExec() checked, or `command` resolved now. Never the bare command: spawn() would
 * search PATH again, and libuv takes an empty PATH entry for the current folder.
 */
function programOf(options: ExecOptions): string {
  if (options.program !== undefined) return options.program;
  const resolved = resolveCommand(options.command);
  if (resolved === null) throw commandError(options.command);
  return resolved;
}

/**
 * Starts the child with signals sent to us passed on to it, for both the patched and the unpatched run; returns the
 * child and the undo. The handlers go in before spawn(): the child runs as soon as it is forked, and a signal that
 * arrived before they were in would take its default action on us (a Ctrl-C right after "ready" killed exec with
 * 130 and left the program's output unread). A signal caught meanwhile is handled once spawn() has returned.
 * The resolved file is started, with argv[0] as the user typed it. A spawn() that throws (bad arguments) is
 * ERR_SPAWN, with no handler left behind.
 */
function spawnForwardingSignals(
  options: ExecOptions,
  spawnOptions: SpawnOptions,
): { child: ChildProcess; undo: () => void } {
  const program = programOf(options);
  const binding = loadNative().binding;
  const groupsOf = (pid: number) => (binding !== null ? binding.processGroups(pid) : processGroupsWithoutAddon(pid));
  let child: ChildProcess | undefined;
  const forward = (signal: NodeJS.Signals) => () => {
    const pid = child?.pid;
    if (pid !== undefined && shouldForwardSignal(signal, groupsOf(pid))) child!.kill(signal);
  };
  const handlers = FORWARDED_SIGNALS.map((s) => [s, forward(s)] as const);
  for (const [s, h] of handlers) process.on(s, h);
  const undo = () => {
    for (const [s, h] of handlers) process.off(s, h);
  };
  try {
    child = spawn(program, options.args, { ...spawnOptions, argv0: options.command });
  } catch (e) {
    undo();
    throw spawnFailure(options.command, e as NodeJS.ErrnoException);
  }
  return { child, undo };
}

/**
 * Runs a command with the injector loaded into it. The child's stdio is the terminal's, the descriptors in `passFds`
 * are handed on, and the injector talks to us over the status pipe only. Signals sent to us are forwarded to the
 * child.
 */
export function runWithInjector(
  options: ExecOptions,
  injector: string | null,
  warnings: ApplyWarning[],
): Promise<ExecOutcome> {
  // No injector, or no profile to inject (off): the program runs as it is.
  if (injector === null || options.profile === null) return runUnpatched(options);
  const profile = options.profile;
  // Its folder resolved here, once: every write checks it is still that folder.
  const traceFile = options.traceFile === undefined ? undefined : checkTraceFile(options.traceFile);
  const { stdio, statusFd } = childDescriptors(options.passFds ?? [], true, options);
  const traceFolder = traceFile === undefined ? undefined : makeTraceFolder();
  // Never throws: the program may have made the folder unremovable; what went wrong is returned for the summary.
  const removeFolder = (): string[] => (traceFolder === undefined ? [] : removeTraceFolder(traceFolder));
  const env = childEnvironment(
    { profile, statusFd: statusFd!, ...(traceFolder === undefined ? {} : { traceFolder }) },
    injector,
  );
  return new Promise((resolve, reject) => {
    let started: { child: ChildProcess; undo: () => void };
    try {
      started = spawnForwardingSignals(options, { stdio, env });
    } catch (e) {
      // The program never ran, so nothing can have changed the new folder: the spawn failure is the one to report.
      removeFolder();
      throw e;
    }
    const { child, undo: cleanup } = started;
    options.onSpawn?.(child);
    const status = statusCollector();
    const pipe = child.stdio[statusFd!] as NodeJS.ReadableStream | null;
    pipe?.on('data', status.add);
    pipe?.on('error', () => undefined);
    child.on('error', (err: NodeJS.ErrnoException) => {
      cleanup();
      removeFolder();
      reject(spawnFailure(options.command, err));
    });
    // Node's docs: the child's stdio may still be open at 'exit', and a process the program started may write its
    // status lines after the program ended. The pipe's end is the signal that every writer is done.
    const pipeEnded = new Promise<void>((done) => {
      if (pipe === null) return done();
      pipe.once('end', done);
      pipe.once('close', done);
      pipe.once('error', () => done());
    });
    child.on('exit', (exitCode, signal) => {
      cleanup();
      // A process the program left running may hold the pipe open for ever: wait for its end at most STATUS_DRAIN_MS.
      let bound: NodeJS.Timeout | undefined;
      const drained = new Promise<void>((done) => {
        bound = setTimeout(done, STATUS_DRAIN_MS);
      });
      void Promise.race([pipeEnded, drained]).then(() => {
        clearTimeout(bound);
        (pipe as { destroy?: () => void } | null)?.destroy?.();
        const reported = parseInjectorStatus(status.text());
        const overflow = status.overflowed()
          ? [`ERR_STATUS_OVERFLOW the status pipe carried more than ${STATUS_LIMIT_BYTES} bytes; the rest was ignored`]
          : [];
        const traceErrors =
          traceFile === undefined ? [] : deliverTraces(traceFolder!, traceFile, child.pid, reported.injectorLoaded);
        const folderErrors = removeFolder();
        resolve({
          exitCode,
          signal,
          ...reported,
          injectorErrors: [...reported.injectorErrors, ...overflow, ...traceErrors, ...folderErrors],
          warnings,
          mlxArchitecture: mlxArchitectureEnv(offeredMlxArchitecture(profile), process.env).set,
        });
      });
    });
  });
}

/**
 * How long exec waits, once the program has exited, for the status pipe's end: a process it left running may hold
 * the pipe open for ever, and must not keep exec from returning.
 */
export const STATUS_DRAIN_MS = 250;

/**
 * Runs the command as it is, with no injector: the cross-platform path of `--allow-unpatched`. A --trace file is
 * written all the same, saying nothing was applied, so a script reading it finds the same shape on every path.
 */
function runUnpatched(options: ExecOptions): Promise<ExecOutcome> {
  // Its folder resolved here, once: every write checks it is still that folder.
  const traceFile = options.traceFile === undefined ? undefined : checkTraceFile(options.traceFile);
  const { stdio } = childDescriptors(options.passFds ?? [], false, options);
  return new Promise((resolve, reject) => {
    const { child, undo: cleanup } = spawnForwardingSignals(options, { stdio });
    options.onSpawn?.(child);
    child.on('error', (err: NodeJS.ErrnoException) => {
      cleanup();
      reject(spawnFailure(options.command, err));
    });
    child.on('exit', (exitCode, signal) => {
      cleanup();
      const injectorErrors = traceFile === undefined ? [] : writeTrace(traceFile, emptyTrace(child.pid, false));
      resolve({
        exitCode,
        signal,
        injectorLoaded: false,
        injectorSlice: null,
        patchedClasses: [],
        injectorErrors,
        processes: [],
        warnings: [],
        mlxArchitecture: null,
      });
    });
  });
}
