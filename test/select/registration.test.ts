// registerFromEnvironment() in-process, over the simulated bare-metal M1 Ultra (not a VM).
process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = 'm1-ultra-bare-metal';

import { beforeAll, expect, it } from 'vitest';
import { status } from '../../lib/patch/apply.js';
import { InvalidProfileError } from '../../lib/core/errors.js';
import { registerFromEnvironment } from '../../lib/select/registration.js';
import { describeSim, loadFixture, requireSimBuild, type SimFixture } from '../support/helpers.js';

let fixture: SimFixture;

describeSim('registerFromEnvironment on bare metal', () => {
  beforeAll(() => {
    requireSimBuild();
    fixture = loadFixture();
  });

  it('reads host facts only: nothing applied, and not one Metal device created', () => {
    expect(registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: '' })).toEqual({
      action: 'not-a-vm',
      host: {
        osVersion: '26.6.1',
        osBuild: null,
        model: 'Mac13,2',
        isVirtualMachine: false,
        arch: 'arm64',
        memoryBytes: 68719476736,
        translated: false,
        cpuBrand: 'Apple M1 Ultra',
        chip: 'Apple M1 Ultra',
      },
    });
    expect(fixture.deviceCalls()).toEqual({ MTLCreateSystemDefaultDevice: 0, MTLCopyAllDevices: 0 });
    expect(status().active).toBe(false);
  });

  it('off does nothing at all', () => {
    expect(registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: 'off' })).toEqual({ action: 'off' });
  });

  it('a malformed value throws before anything else, even where nothing would be applied', () => {
    expect(() => registerFromEnvironment({ METAL_CAP_SHIM_PROFILE: 'apple99' })).toThrow(InvalidProfileError);
    expect(fixture.deviceCalls()).toEqual({ MTLCreateSystemDefaultDevice: 0, MTLCopyAllDevices: 0 });
  });
});
