// The native doctor on real Metal (macOS only; skipped, visibly, elsewhere): the one place where the MSL of
// src-native/doctor/doctor_kernels.h is compiled by Apple's compiler and run by a GPU. CI runs it on GitHub's arm64 runners
// (Virtualization.framework guests with the paravirtual device) and on macos-15-intel.
//
// Nothing here hard-codes a device's results. Expectations come from the running machine: what its macOS has
// (MSL 3.1 from 14, residency sets from 15), what it reports (threadgroup memory up to the reported maximum must work
// on bare metal), and what any correct doctor run must look like (every probe reaches an outcome within its deadline,
// kernels that need nothing newer than macOS 11 compile, nothing is left behind). Where only the device can say (the
// paravirtual device's SIMD-group kernels, its NoCopy pages), the outcome is logged for the CI record.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { applyProfile, probe, restore, status, type DeviceReport } from '../../lib/index.js';
import { DOCTOR_PROBE_IDS, DOCTOR_STATUSES } from '../../lib/device/doctor-vocabulary.js';
import { loadNative } from '../../lib/device/native.js';
import type { NativeDoctorOptions, NativeDoctorResult } from '../../types/binding.js';

const isMac = process.platform === 'darwin';
const stock = isMac ? probe({ allDevices: true }) : null;
const devices: DeviceReport[] = stock?.supported ? stock.devices : [];
const osMajor = Number.parseInt(stock?.host?.osVersion ?? '0', 10);
const isVm = stock?.host?.isVirtualMachine === true;
const SIZES = [16384, 32768, 49152, 65536];
const TIMEOUT_MS = 20_000;

const dirs: string[] = [];
function options(device: number, extra: Partial<NativeDoctorOptions> = {}): NativeDoctorOptions {
  const tempDir = mkdtempSync(path.join(tmpdir(), 'mcs-doctor-live-'));
  dirs.push(tempDir);
  return {
    device,
    probes: [...DOCTOR_PROBE_IDS],
    timeoutMs: TIMEOUT_MS,
    threadgroupSizes: SIZES,
    threadgroupGroups: 1024,
    stockThreadgroupMemory: stock?.supported
      ? (stock.devices.find((d) => d.index === device)?.maxThreadgroupMemoryLength ?? 0)
      : 0,
    // Above the stock limit only in a VM: on real hardware that is undefined behaviour.
    aboveStockThreadgroupMemory: isVm,
    mmapFile: null,
    mmapSize: 64 << 20,
    tempDir,
    ...extra,
  };
}

function runDoctor(o: NativeDoctorOptions): { result: NativeDoctorResult; elapsed: number } {
  const binding = loadNative().binding;
  if (!binding) throw new Error('the addon did not load');
  const start = performance.now();
  const result = binding.doctor(o);
  return { result, elapsed: performance.now() - start };
}

const NEEDS_DEVICE = isMac && devices.length === 0 ? ' [skipped: Metal reports no device on this runner]' : '';

describe.skipIf(!isMac)('doctor on real Metal (macOS only)', () => {
  afterEach(() => {
    restore();
  });
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it.skipIf(devices.length === 0).each(devices.map((d) => [d.index, d.name, d] as const))(
    `device %i (%s): every probe reaches an outcome in time, the kernels compile, nothing is left behind${NEEDS_DEVICE}`,
    (index, _name, device) => {
      const o = options(index);
      const hooksBefore = status().hooks;
      const { result, elapsed } = runDoctor(o);
      console.log(`[live] doctor on ${device.name} [${device.className}]: ${JSON.stringify(result.outcomes)}`);
      expect(result.device).toEqual({
        index,
        name: device.name,
        className: device.className,
        registryId: device.registryId,
      });
      expect(result.outcomes.map((x) => x.id)).toEqual([...DOCTOR_PROBE_IDS]);
      for (const x of result.outcomes) {
        expect(DOCTOR_STATUSES, x.id).toContain(x.status);
        expect(['error', 'timeout', 'skipped'], `${x.id}: ${x.detail}`).not.toContain(x.status);
        expect(x.detail, x.id).toMatch(/^\S[^\n]*$/);
        expect(x.ms, x.id).toBeGreaterThanOrEqual(0);
        expect(x.ms, x.id).toBeLessThanOrEqual(TIMEOUT_MS);
      }
      expect(elapsed).toBeLessThanOrEqual(DOCTOR_PROBE_IDS.length * TIMEOUT_MS);
      const by = Object.fromEntries(result.outcomes.map((x) => [x.id, x]));

      // Kernels that need nothing newer than MSL 2.3 compile on every macOS these runners have.
      for (const id of ['simdgroup-reduction', 'threadgroup-memory', 'nocopy-mmap'] as const) {
        expect(by[id]!.detail, id).not.toMatch(/^compiling /);
      }
      if (osMajor < 14) {
        expect(by.bfloat).toMatchObject({
          status: 'unsupported',
          detail: `bfloat needs MSL 3.1, which macOS ${osMajor} does not have (macOS 14+)`,
        });
      } else {
        expect(by.bfloat!.status, by.bfloat!.detail).not.toBe('unsupported');
      }
      if (osMajor < 15) {
        expect(by['residency-set']).toMatchObject({ status: 'unsupported' });
      } else {
        expect(by['residency-set']!.detail).not.toMatch(/^compiling /);
        expect(['pass', 'fail', 'wrong-result']).toContain(by['residency-set']!.status);
      }

      const tg = by['threadgroup-memory']!;
      // Up to 32768 bytes a size is proven; above, it can only be accepted (threadgroups that large may never share a
      // GPU core).
      if (tg.provenThreadgroupMemory !== null) {
        expect(SIZES).toContain(tg.provenThreadgroupMemory);
        expect(tg.provenThreadgroupMemory).toBeLessThanOrEqual(32768);
      }
      if (tg.acceptedThreadgroupMemory !== null) {
        expect(SIZES).toContain(tg.acceptedThreadgroupMemory);
        expect(tg.acceptedThreadgroupMemory).toBeGreaterThan(32768);
      }
      const worked = Math.max(tg.provenThreadgroupMemory ?? 0, tg.acceptedThreadgroupMemory ?? 0);
      if (tg.failedThreadgroupMemory !== null) {
        expect(SIZES).toContain(tg.failedThreadgroupMemory);
        expect(tg.failedThreadgroupMemory).toBeGreaterThan(worked);
      }
      const nocopy = by['nocopy-mmap']!;
      expect(['pass', 'wrong-result', 'fail']).toContain(nocopy.status);
      if (nocopy.status === 'pass') expect(nocopy.bufferLength).toBe(64 << 20);

      // Bare metal keeps the promises the device makes: sizes up to its reported maximum work, and what its families
      // promise (llama.cpp's gates: Apple7 for both SIMD-group paths, Apple6 or Metal3 for bfloat) computes right.
      if (!isVm) {
        const reported = device.maxThreadgroupMemoryLength ?? 0;
        expect(tg.provenThreadgroupMemory ?? 0).toBeGreaterThanOrEqual(Math.min(reported, 32768));
        expect(worked).toBeGreaterThanOrEqual(Math.min(reported, Math.max(...SIZES)));
        expect(nocopy.status, nocopy.detail).toBe('pass');
        if (device.families.apple7) {
          expect(by['simdgroup-reduction']!.status, by['simdgroup-reduction']!.detail).toBe('pass');
          expect(by['simdgroup-matrix']!.status, by['simdgroup-matrix']!.detail).toBe('pass');
        }
        if (osMajor >= 14 && (device.families.apple6 || device.families.metal3)) {
          expect(by.bfloat!.status, by.bfloat!.detail).toBe('pass');
        }
      }

      expect(readdirSync(o.tempDir)).toEqual([]);
      expect(status().hooks).toEqual(hooksBefore);
    },
  );

  it.skipIf(devices.length === 0)(`reads a model-like file read-only and leaves it as it was${NEEDS_DEVICE}`, () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'mcs-doctor-live-file-'));
    dirs.push(dir);
    const file = path.join(dir, 'model.bin');
    const bytes = Buffer.alloc(3 * 1024 * 1024 + 123);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 2654435761) >>> 24;
    writeFileSync(file, bytes);
    const { result } = runDoctor(options(0, { probes: ['nocopy-mmap'], mmapFile: file, tempDir: dir }));
    console.log(`[live] doctor nocopy-mmap over a user file: ${JSON.stringify(result.outcomes[0])}`);
    expect(['pass', 'wrong-result', 'fail']).toContain(result.outcomes[0]!.status);
    expect(readFileSync(file).equals(bytes)).toBe(true);
    expect(readdirSync(dir)).toEqual(['model.bin']);
  });

  it.skipIf(devices.length === 0)(
    `under a raising profile: what Metal itself asks while compiling and dispatching is traced, and the hooks stay as applied${NEEDS_DEVICE}`,
    () => {
      const applied = applyProfile('cua-release', { force: true, trace: true });
      expect(applied.applied, applied.detail ?? '').toBe(true);
      const hooks = status().hooks;
      const { result } = runDoctor(
        options(0, { probes: ['simdgroup-reduction', 'simdgroup-matrix', 'threadgroup-memory'] }),
      );
      const trace = status({ trace: true }).trace;
      console.log(
        `[live] doctor under cua-release: ${JSON.stringify(result.outcomes)}; queries Metal made meanwhile: ${JSON.stringify(trace)}`,
      );
      for (const x of result.outcomes)
        expect(['error', 'timeout', 'skipped'], `${x.id}: ${x.detail}`).not.toContain(x.status);
      expect(status().hooks).toEqual(hooks);
    },
  );
});
