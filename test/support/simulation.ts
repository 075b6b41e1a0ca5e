/**
 * The simulated snapshot a test runs against, chosen per describe block (or per test) inside one process:
 * `useSimulation(selector)` loads it into this process's simulated Metal through the simulation's control
 * (build/test/sim_control.node, test/sim-metal/src/SimControl.mm) and sets METAL_CAP_SHIM_SIM_SNAPSHOT, so the
 * processes a test starts (the CLI, doctor's runner, exec's programs) read the same one.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { checkSimulatedSnapshot } from '../../lib/device/probe.js';
import { loadNative, SIM_SNAPSHOT_ENV } from '../../lib/device/native.js';
import { requireSimBuild, root } from './helpers.js';

/** The control addon: loads another snapshot into the simulated Metal this process links. */
export interface SimControl {
  /** null when the snapshot loaded, else why not (and then no device is loaded). */
  loadSnapshot(selector: string): string | null;
  /** How many times this process loaded a snapshot (or selected none). */
  loads(): number;
}

let control: SimControl | undefined;

/** The control addon, loaded once. */
export function simControl(): SimControl {
  requireSimBuild();
  control ??= createRequire(import.meta.url)(path.join(root, 'build', 'test', 'sim_control.node')) as SimControl;
  return control;
}

/**
 * Makes `selector` (a bundled snapshot's name, the path of a snapshot or simulation file, or '' for a simulated Metal
 * without a device) this process's snapshot, now. Refused, with nothing changed, while a profile is applied or a hook
 * is installed (hooks are per class, and a class can serve the next snapshot's devices: restore() first), and for a
 * selector the environment would be refused for, with the same typed error (lib/device/probe.ts checks both). The
 * engine's trace is emptied, as a new process has it.
 */
export function loadSimulation(selector: string): void {
  const previous = process.env[SIM_SNAPSHOT_ENV];
  const putBack = () => {
    if (previous === undefined) delete process.env[SIM_SNAPSHOT_ENV];
    else process.env[SIM_SNAPSHOT_ENV] = previous;
  };
  // loadNative() loads the simulated build only while the variable is set, and keeps its first answer.
  process.env[SIM_SNAPSHOT_ENV] = previous ?? '';
  const native = loadNative();
  if (native.binding === null) {
    putBack();
    throw new Error(`the simulated build is not loaded: ${native.detail}`);
  }
  const binding = native.binding;
  // The simulation reads the environment's selector at its first call: that is the one before this switch.
  simControl().loads();
  const state = binding.status();
  if (state.active || state.hooks.length > 0) {
    putBack();
    const hooks = state.hooks.map((h) => `-[${h.className} ${h.selector}]`).join(', ');
    throw new Error(
      `cannot switch the simulation to '${selector}' while a patch is in place (${hooks || 'a profile is active'}): call restore() first`,
    );
  }
  process.env[SIM_SNAPSHOT_ENV] = selector;
  try {
    checkSimulatedSnapshot(binding);
  } catch (err) {
    putBack();
    throw err;
  }
  // A new snapshot starts as a new process would: nothing traced yet.
  binding.trace(true);
  const problem = simControl().loadSnapshot(selector);
  if (problem !== null) throw new Error(`the simulation loaded no device from '${selector}': ${problem}`);
}

/**
 * Runs the enclosing describe block (or file) against `selector`, loaded before its first test, and puts the snapshot
 * that was selected before back after its last. A function is called then, for a file a beforeAll writes.
 */
export function useSimulation(selector: string | (() => string)): void {
  let previous: string | undefined;
  beforeAll(() => {
    previous = process.env[SIM_SNAPSHOT_ENV];
    loadSimulation(typeof selector === 'function' ? selector() : selector);
  });
  afterAll(() => {
    loadSimulation(previous ?? '');
    if (previous === undefined) delete process.env[SIM_SNAPSHOT_ENV];
  });
}
