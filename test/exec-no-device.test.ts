// exec's planning over a simulated Metal with no device (the empty snapshot): nothing to guard and nothing to warn
// about, so the program runs with the injector, which then patches whatever device the program finds.
process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = '';

import { beforeAll, expect, it } from 'vitest';
import { injectorPath, prepareExec, resolveCommand } from '../lib/exec.js';
import { resolveProfile } from '../lib/profiles.js';
import { describeSim, requireSimBuild } from './helpers.js';

describeSim('prepareExec with no Metal device here', () => {
  beforeAll(() => requireSimBuild());

  it('no refusal without --force and no warnings: the injector, the program, nothing else', () => {
    expect(prepareExec({ profile: resolveProfile(), command: 'true', args: [] }, 'linux')).toEqual({
      injector: injectorPath(),
      resolved: resolveCommand('true'),
      warnings: [],
      unpatched: null,
    });
    expect(injectorPath()).not.toBeNull();
  });
});
