// lib/device/paravirtual.ts: how the package tells the paravirtual device and a virtual machine, by name, class and
// host, each test on its own and over the bundled recordings.
import { describe, expect, it } from 'vitest';
import {
  isParavirtualDevice,
  isVmHost,
  namedParavirtual,
  PARAVIRTUAL_DEVICE_NAME,
} from '../../lib/device/paravirtual.js';
import { probeSnapshot } from '../../lib/device/probe.js';
import type { DeviceReport, HostInfo } from '../../lib/device/types.js';

const guest = probeSnapshot('vz-guest-m1-ultra-tahoe-stock');
const bare = probeSnapshot('m1-ultra-bare-metal');
const guestDevice = guest.devices[0]!;
const bareDevice = bare.devices[0]!;
const renamed = (d: DeviceReport, name: string): DeviceReport => ({ ...d, name });

describe('the paravirtual device', () => {
  it('the recorded guest reports the name MLX compares against', () => {
    expect(guestDevice.name).toBe(PARAVIRTUAL_DEVICE_NAME);
  });

  it('namedParavirtual reads the name only, as patched', () => {
    expect([namedParavirtual(guestDevice), namedParavirtual(renamed(guestDevice, 'Apple M1 Ultra'))]).toEqual([
      true,
      false,
    ]);
    expect(namedParavirtual(renamed(bareDevice, 'Paravirtual thing'))).toBe(true);
  });

  it('isParavirtualDevice: the class survives a new name; either alone is enough, case ignored', () => {
    expect(guestDevice.className).toBe('AppleParavirtDevice');
    expect([
      isParavirtualDevice(guestDevice),
      isParavirtualDevice(renamed(guestDevice, 'Apple M1 Ultra')),
      isParavirtualDevice(renamed(bareDevice, 'apple PARAVIRTUAL device')),
      isParavirtualDevice(bareDevice),
    ]).toEqual([true, true, true, false]);
  });
});

describe('isVmHost', () => {
  const host = (over: Partial<HostInfo>): HostInfo => ({ ...bare.host!, ...over });
  it('the host saying so, a VirtualMac model, or the paravirtual name: each alone is enough', () => {
    expect([
      isVmHost(guest.host, guestDevice),
      isVmHost(bare.host, bareDevice),
      isVmHost(host({ isVirtualMachine: true }), bareDevice),
      isVmHost(host({ isVirtualMachine: null, model: 'VirtualMac2,1' }), bareDevice),
      isVmHost(host({ isVirtualMachine: null, model: 'Mac13,2' }), bareDevice),
      isVmHost(null, guestDevice),
      isVmHost(null, bareDevice),
    ]).toEqual([true, false, true, true, false, true, false]);
  });
});
