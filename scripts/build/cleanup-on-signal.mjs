// A build's private temporary folders must not outlive it: a cold llama.cpp tools build leaves about 250 MB in the
// temporary folder, and a user stops a 15-minute build with Ctrl-C, a supervisor with SIGTERM, a closed terminal with
// SIGHUP. The guard removes the folders when the build ends or fails, and on those signals first stops the build's
// own children (started in their own process group, so the compilers below them stop too, and nothing writes into a
// folder while it is removed), then exits as a shell reports a signal: 128 + its number (130, 143, 129).
import { rmSync } from 'node:fs';
import { constants } from 'node:os';

/** The signals that stop a build: Ctrl-C, a supervisor, a closed terminal. */
export const STOP_SIGNALS = Object.freeze(['SIGINT', 'SIGTERM', 'SIGHUP']);

/** How long a stopped child may take to exit before its group is killed. */
const CHILD_GRACE_MS = 5000;

/** The exit code a shell gives a process that `signal` ended: 128 + the signal's number. */
export function signalExitCode(signal) {
  const n = constants.signals[signal];
  if (n === undefined) throw new Error(`${signal} is not a signal`);
  return 128 + n;
}

/** Sends `signal` to the child's process group (it was spawned detached), or to the child alone when that fails. */
function signalGroup(child, signal) {
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      // It has exited already.
    }
  }
}

/** Stops every child: `signal` to its group, then SIGKILL for whatever has not exited within the grace time. */
async function stopChildren(children, signal) {
  const exits = [...children].map((child) => {
    if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
    const closed = new Promise((resolve) => child.once('close', resolve));
    signalGroup(child, signal);
    let timer;
    const grace = new Promise((resolve) => {
      timer = setTimeout(() => {
        signalGroup(child, 'SIGKILL');
        resolve();
      }, CHILD_GRACE_MS);
    });
    return Promise.race([closed, grace]).finally(() => clearTimeout(timer));
  });
  await Promise.all(exits);
}

/**
 * A guard over a build's temporary folders and children, listening for STOP_SIGNALS until released:
 * `folder(dir)` and `child(child)` register (each returns its argument); `release()` removes the folders and stops
 * listening (call it when the build ends, well or not); `stopping()` is the signal being handled, or null. On a
 * signal: the children are stopped, the folders removed, `log` told, and `exit` called with the signal's code.
 */
export function cleanupOnSignal({ log = () => {}, exit = (code) => process.exit(code) } = {}) {
  const folders = new Set();
  const children = new Set();
  let stoppedBy = null;
  const removeFolders = () => {
    // Retries: a child that was just stopped may still be closing a file in the folder.
    for (const dir of folders) rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    folders.clear();
  };
  const onSignal = async (signal) => {
    if (stoppedBy !== null) return;
    stoppedBy = signal;
    await stopChildren(children, signal);
    const removed = [...folders];
    removeFolders();
    log(`stopped by ${signal}${removed.length > 0 ? `; removed ${removed.join(', ')}` : ''}`);
    exit(signalExitCode(signal));
  };
  const handlers = STOP_SIGNALS.map((signal) => {
    const handler = () => void onSignal(signal);
    process.on(signal, handler);
    return [signal, handler];
  });
  return {
    folder(dir) {
      folders.add(dir);
      return dir;
    },
    child(child) {
      children.add(child);
      child.once('close', () => children.delete(child));
      return child;
    },
    stopping: () => stoppedBy,
    release() {
      // While a signal is handled its handler removes the folders once the children are gone; not before.
      if (stoppedBy === null) removeFolders();
      for (const [signal, handler] of handlers) process.off(signal, handler);
    },
  };
}
