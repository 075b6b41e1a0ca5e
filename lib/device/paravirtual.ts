import type { DeviceReport, HostInfo } from './types.js';

/** The name Virtualization.framework's paravirtual device reports (MLX compares against it exactly). */
export const PARAVIRTUAL_DEVICE_NAME = 'Apple Paravirtual device';

/**
 * Whether the device's name says it is the paravirtual device. The name as reported, or as patched: a profile's
 * deviceName changes it, and the engines that read the name then see the new one.
 */
export function namedParavirtual(device: DeviceReport): boolean {
  return device.name.includes('Paravirtual');
}

/**
 * Whether the device is the paravirtual device itself, by its class name or by its device name (either alone is
 * enough, case ignored): the class survives a profile's deviceName, so raising a renamed paravirtual device is still
 * raising the paravirtual device.
 */
export function isParavirtualDevice(device: DeviceReport): boolean {
  return /paravirt/i.test(device.className) || /paravirtual/i.test(device.name);
}

/** True when the host or the device says this is a virtual machine. */
export function isVmHost(host: HostInfo | null, device: DeviceReport): boolean {
  return host?.isVirtualMachine === true || (host?.model ?? '').startsWith('VirtualMac') || namedParavirtual(device);
}
