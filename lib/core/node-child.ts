/**
 * How this process starts one of the package's own Node scripts as a child (doctor's probe runner, bench's
 * node-llama-cpp side): the one decision both make, and the start itself. `process.execPath script.js` is only a Node
 * running a script where the host is Node. An Electron app whose `RunAsNode` fuse is off (Electron's security advice,
 * and Electron Forge's templates) ignores ELECTRON_RUN_AS_NODE and starts as a second instance of the app; a single
 * executable application (or a pkg-style build) runs its embedded script, not the one given. Electron's main process
 * has its own way, `utilityProcess.fork`; anywhere else that is not plain Node, nothing is started at all.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import { PassThrough, type Readable } from 'node:stream';
import { NativeError } from './errors.js';

/** What tells the hosts apart, read from a process (hostProcess) or given by a test. */
export interface HostProcess {
  /** `process.versions.electron`: set in every Electron process, also one running as Node. */
  electron: string | undefined;
  /** Electron's `process.type`: `browser` (the main process), `renderer`, `utility`, `worker`; unset as Node. */
  processType: string | undefined;
  /** `node:sea`'s isSea(): this is a single executable application. */
  sea: boolean;
  /** A pkg-style build (`process.pkg`), which also runs its embedded script. */
  pkg: boolean;
}

/** How a child is started here: `spawn` of process.execPath, Electron's `utility-process`, or nothing (`why` not). */
export type NodeChildStart = { how: 'spawn' } | { how: 'utility-process' } | { how: 'none'; why: string };

/** Whether `node:sea` says this is a single executable application (false where Node is too old to have it). */
function isSingleExecutable(): boolean {
  try {
    const sea = createRequire(import.meta.url)('node:sea') as { isSea?: () => boolean };
    return sea.isSea?.() === true;
  } catch {
    return false;
  }
}

/** This process's host facts. */
export function hostProcess(): HostProcess {
  const p = process as NodeJS.Process & { type?: string; pkg?: unknown };
  return { electron: p.versions.electron, processType: p.type, sea: isSingleExecutable(), pkg: p.pkg !== undefined };
}

/**
 * How this host starts a Node child running one of our scripts. `wait: true` asks for a start a thread can wait on
 * synchronously (spawnSync), which only plain Node gives: Electron's utility process is asynchronous.
 */
export function nodeChildStart(host: HostProcess, wait = false): NodeChildStart {
  if (host.sea) return { how: 'none', why: 'a single executable application runs its embedded script, not ours' };
  if (host.pkg) return { how: 'none', why: 'a packaged executable (pkg) runs its embedded script, not ours' };
  // An Electron binary running as Node (ELECTRON_RUN_AS_NODE honoured, so its fuse is on) starts itself the same way.
  if (host.electron === undefined || host.processType === undefined) return { how: 'spawn' };
  if (host.processType !== 'browser')
    return {
      how: 'none',
      why: `Electron's ${host.processType} process cannot start a Node child (utilityProcess is the main process's), and the app's own binary would start a second instance of the app`,
    };
  if (wait)
    return {
      how: 'none',
      why: "Electron's main process starts a Node child only asynchronously (utilityProcess.fork), and the app's own binary would start a second instance of the app",
    };
  return { how: 'utility-process' };
}

/**
 * The typed error for a host where `what` cannot start: ERR_CHILD_HOST, with why and what to do instead (`remedy`).
 * Thrown at once, before anything is started.
 */
export function childHostError(what: string, why: string, remedy: string): NativeError {
  return new NativeError('ERR_CHILD_HOST', `${what} cannot start here: ${why}. ${remedy}`);
}

/** A started child, the same whichever way it was started. */
export interface NodeChild {
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** Sends a signal to the child (to its process, whichever API started it). */
  kill(signal: NodeJS.Signals): void;
  /** `close`: it exited and its output ended (`signal` only when known); `error`: it could not be started. */
  on(event: 'close', listener: (code: number | null, signal: NodeJS.Signals | null) => void): this;
  on(event: 'error', listener: (err: Error) => void): this;
}

/** What a child is given: its environment, its folder, and its input (one string, read by readChildInput). */
export interface NodeChildOptions {
  env: NodeJS.ProcessEnv;
  cwd?: string;
  input: string;
}

/** Electron's utilityProcess, as far as it is used here. */
interface UtilityProcess {
  pid: number | undefined;
  stdout: Readable | null;
  stderr: Readable | null;
  postMessage(message: unknown): void;
  kill(): boolean;
  once(event: 'spawn', listener: () => void): unknown;
  once(event: 'exit', listener: (code: number) => void): unknown;
}
interface ElectronMain {
  app: { whenReady(): Promise<unknown> };
  utilityProcess: {
    fork(modulePath: string, args: string[], options: Record<string, unknown>): UtilityProcess;
  };
}

function spawnChild(entry: string, o: NodeChildOptions): NodeChild {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [entry], {
    env: { ...o.env, ELECTRON_RUN_AS_NODE: '1' },
    ...(o.cwd === undefined ? {} : { cwd: o.cwd }),
    stdio: ['pipe', 'pipe', 'pipe'],
    windowsHide: true,
  });
  // A child that dies at once closes its stdin under us: that is its exit's to report.
  child.stdin.on('error', () => {});
  child.stdin.end(o.input);
  return child;
}

class UtilityChild extends EventEmitter implements NodeChild {
  readonly stdout = new PassThrough();
  readonly stderr = new PassThrough();
  private process: UtilityProcess | null = null;
  private signal: NodeJS.Signals | null = null;
  private pending: NodeJS.Signals | null = null;

  constructor(entry: string, o: NodeChildOptions) {
    super();
    const electron = createRequire(import.meta.url)('electron') as ElectronMain;
    // fork() may only be called once the app is ready.
    electron.app.whenReady().then(
      () => this.fork(electron, entry, o),
      (err: unknown) => this.emit('error', err as Error),
    );
  }

  private fork(electron: ElectronMain, entry: string, o: NodeChildOptions): void {
    // The utility process is Electron's own helper: ELECTRON_RUN_AS_NODE there would make it something else.
    const { ELECTRON_RUN_AS_NODE: _, ...env } = o.env;
    let child: UtilityProcess;
    try {
      child = electron.utilityProcess.fork(entry, [], {
        env,
        ...(o.cwd === undefined ? {} : { cwd: o.cwd }),
        stdio: 'pipe',
        serviceName: 'metal-cap-shim',
      });
    } catch (err) {
      this.emit('error', err as Error);
      return;
    }
    this.process = child;
    // Its stdin cannot be a pipe: the input goes by its parent port (readChildInput).
    child.postMessage(o.input);
    let open = 3;
    let code: number | null = null;
    const closed = () => {
      if (--open === 0) this.emit('close', code, this.signal);
    };
    for (const [from, to] of [
      [child.stdout, this.stdout],
      [child.stderr, this.stderr],
    ] as const) {
      if (from === null) {
        to.end();
        closed();
      } else {
        from.pipe(to);
        from.once('close', closed);
      }
    }
    child.once('exit', (exitCode) => {
      code = exitCode;
      closed();
    });
    if (this.pending !== null) this.kill(this.pending);
  }

  kill(signal: NodeJS.Signals): void {
    const pid = this.process?.pid;
    if (pid === undefined) {
      this.pending = signal;
      return;
    }
    this.signal = signal;
    try {
      process.kill(pid, signal);
    } catch {
      // Already gone: its exit is on its way.
    }
  }
}

/**
 * Starts `entry` (one of the package's scripts under dist/) as a Node child the way `start` says, giving it `input`.
 * A start that fails is told by `error` or `close`, never thrown.
 */
export function startNodeChild(
  entry: string,
  start: Exclude<NodeChildStart, { how: 'none' }>,
  o: NodeChildOptions,
): NodeChild {
  return start.how === 'spawn' ? spawnChild(entry, o) : new UtilityChild(entry, o);
}

/** Electron's parent port, in a utility process. */
interface ParentPort {
  once(event: 'message', listener: (e: { data: unknown }) => void): unknown;
}

/**
 * A child's input, as startNodeChild gave it: the first message on the parent port in Electron's utility process,
 * standard input elsewhere.
 */
export function readChildInput(): Promise<string> {
  const port = (process as NodeJS.Process & { parentPort?: ParentPort }).parentPort;
  if (port === undefined) {
    return new Promise((resolve, reject) => {
      let text = '';
      process.stdin.setEncoding('utf8');
      process.stdin.on('data', (chunk: string) => {
        text += chunk;
      });
      process.stdin.on('end', () => resolve(text));
      process.stdin.on('error', reject);
    });
  }
  return new Promise((resolve) => port.once('message', (e) => resolve(String(e.data))));
}

/** True in Electron's utility process, which stays alive for its parent port until it exits itself. */
export function isUtilityProcess(): boolean {
  return (process as NodeJS.Process & { parentPort?: ParentPort }).parentPort !== undefined;
}
