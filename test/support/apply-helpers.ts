// Helpers for the in-process suites of applyProfile / restore / status and of register (test/patch/apply*.test.ts,
// test/select/registration.test.ts): snapshot files edited from a bundled one, and importing `metal-cap-shim/register` in this
// process with its effects on the process captured.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { vi } from 'vitest';
import { InvalidProfileError } from '../../lib/core/errors.js';
import { resolveProfile } from '../../lib/patch/profiles.js';
import { type Simulation, writeSimulation } from '../sim-metal/simulation.js';
import { root } from './helpers.js';

/**
 * A bundled snapshot, edited (the simulation's extension allowed), written to a fresh temporary file: returns the
 * file's path, a valid selector for the simulation and, without the extension, for `--snapshot`.
 */
export function editedSnapshot(bundled: string, id: string, edit: (s: Simulation) => void): string {
  const snapshot = JSON.parse(readFileSync(path.join(root, 'snapshots', `${bundled}.json`), 'utf8')) as Simulation;
  snapshot.id = id;
  edit(snapshot);
  return writeSimulation(snapshot, id);
}

/**
 * The stock Tahoe guest with a second paravirtual device (its own class), which is the default device and which
 * MTLCreateSystemDefaultDevice() hands out as an `MTLDebugDevice`, a class no listed device has. With `driftAfter`,
 * that device's threadgroup memory answers 16 bytes more after that many queries (wrapper and listed object count
 * together: they are one simulated device).
 */
export function defaultObjectGuest(id: string, driftAfter: number | null): string {
  return editedSnapshot('vz-guest-m1-ultra-tahoe-stock', id, (s) => {
    const second = structuredClone(s.devices[0]!);
    second.className = 'SimSecondParavirtDevice';
    second.registryId = s.devices[0]!.registryId + 1;
    second.simulation = {
      methodsOnConcreteClass: true,
      defaultObjectClass: 'MTLDebugDevice',
      ...(driftAfter === null ? {} : { driftAfter }),
    };
    s.devices.push(second);
    s.defaultDevice = 1;
  });
}

/** The VM signals a host can show; register and applyProfile go by kern.hv_vmm_present alone. */
export type VmSignal = 'hv_vmm_present' | 'hw.model' | 'device-name';

/**
 * The bare-metal M1 Ultra showing exactly one VM signal: kern.hv_vmm_present = 1, hw.model VirtualMac2,1, or a device
 * named "Apple Paravirtual device" (its class stays the M1's).
 */
export function oneSignalHost(signal: VmSignal): string {
  return editedSnapshot('m1-ultra-bare-metal', `only-${signal.replace(/[._]/g, '-')}`, (s) => {
    if (signal === 'hv_vmm_present') s.host.isVirtualMachine = true;
    if (signal === 'hw.model') s.host.model = 'VirtualMac2,1';
    if (signal === 'device-name') s.devices[0]!.name = 'Apple Paravirtual device';
  });
}

/** The bare-metal M1 Ultra's host facts, as register reports them. */
export const M1_HOST = {
  osVersion: '26.6.1',
  osBuild: null,
  model: 'Mac13,2',
  isVirtualMachine: false,
  arch: 'arm64',
  memoryBytes: 68719476736,
  translated: false,
  cpuBrand: 'Apple M1 Ultra',
  chip: 'Apple M1 Ultra',
} as const;

/** The warning of a profile claiming Apple9 on the bundled snapshots' M1 Ultra host (Apple7). */
export const APPLE9_ABOVE_M1_ULTRA = {
  code: 'above-host-family',
  message:
    "the profile claims Apple9, above Apple7, the true family of this host's Apple M1 Ultra: llama.cpp v0.5.0 and later will tune with its Apple9 table (swept on the A18 Pro, M3 Max, M3 Pro, M3 Ultra, M4, M4 Max, M4 Pro), not this host's Apple M1 Ultra (profile host claims exactly the host's)",
} as const;

/** What applying cua-release to the bundled bare-metal M1 Ultra warns of, in order. */
export const CUA_RELEASE_ON_M1_ULTRA = [
  APPLE9_ABOVE_M1_ULTRA,
  {
    code: 'threadgroup-memory-above-hardware',
    message:
      'threadgroup memory 65536 bytes is above 32768, which no Apple GPU exceeds: llama.cpp v0.5.0 and later sizes no kernel above 32768 from it on this device, but its ggml-metal.m releases do (audit --rules legacy); profile apple9-hw-tg avoids this',
  },
  {
    code: 'not-paravirtual',
    message:
      'device 0 (Apple M1 Ultra, AGXG13DDevice) is not the paravirtual device; raising its answers claims features its GPU may not have',
  },
] as const;

/** What importing lib/register.ts did to the process. */
export interface RegisterEffects {
  /** process.exit() calls (their codes); the spy keeps the test process alive. */
  exits: unknown[];
  /** process.emitWarning() calls, whole. */
  warnings: unknown[][];
  /** Everything written to stderr. */
  stderr: string;
}

/**
 * Runs register's side effect in this process, as `node --import metal-cap-shim/register` would: sets
 * METAL_CAP_SHIM_PROFILE (undefined: unset), imports a fresh copy of lib/register.ts, and records what it did to
 * the process. The native state (hooks, profile) is the process's own, so status() sees what register applied.
 */
export async function importRegister(profile: string | undefined): Promise<RegisterEffects> {
  const saved = process.env.METAL_CAP_SHIM_PROFILE;
  if (profile === undefined) delete process.env.METAL_CAP_SHIM_PROFILE;
  else process.env.METAL_CAP_SHIM_PROFILE = profile;
  const exit = vi.spyOn(process, 'exit').mockImplementation((() => undefined) as never);
  const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
  let stderr = '';
  const write = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stderr += String(chunk);
    return true;
  });
  try {
    vi.resetModules();
    await import('../../lib/register.js');
    return { exits: exit.mock.calls.map((c) => c[0]), warnings: warn.mock.calls, stderr };
  } finally {
    write.mockRestore();
    warn.mockRestore();
    exit.mockRestore();
    if (saved === undefined) delete process.env.METAL_CAP_SHIM_PROFILE;
    else process.env.METAL_CAP_SHIM_PROFILE = saved;
  }
}

/**
 * The error register gives for a malformed METAL_CAP_SHIM_PROFILE: resolveProfile()'s own, prefixed with the variable
 * and followed by the two values that are no profile, off and auto.
 */
export function invalidProfileError(value: string): InvalidProfileError {
  try {
    resolveProfile(value);
  } catch (err) {
    if (!(err instanceof InvalidProfileError)) throw err;
    return new InvalidProfileError(
      err.field,
      `METAL_CAP_SHIM_PROFILE=${value.trim()}: ${err.message}; METAL_CAP_SHIM_PROFILE also takes off (do nothing) and auto (the profile doctor proved), in any case`,
    );
  }
  throw new Error(`${value} is a valid profile`);
}
