// exec's planning over a simulated Metal with no device (the empty snapshot): nothing to guard and nothing to warn
// about, so the program runs with the injector, which then patches whatever device the program finds.
process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = '';

import { beforeAll, expect, it } from 'vitest';
import { resolveCommand } from '../../lib/exec/command.js';
import { injectorPath } from '../../lib/exec/injector.js';
import { prepareExec } from '../../lib/exec/prepare.js';
import { RefusedError } from '../../lib/core/errors.js';
import { resolveProfile } from '../../lib/patch/profiles.js';
import { describeSim, requireSimBuild, thrown } from '../support/helpers.js';

describeSim('prepareExec with no Metal device here', () => {
  beforeAll(() => requireSimBuild());

  it('no refusal without --force and no warnings: the injector, the program, nothing else', () => {
    expect(prepareExec({ profile: resolveProfile('cua-release'), command: 'true', args: [] }, 'linux')).toEqual({
      injector: injectorPath(),
      resolved: resolveCommand('true'),
      profile: resolveProfile('cua-release'),
      warnings: [],
      unpatched: null,
    });
    expect(injectorPath()).not.toBeNull();
  });

  it('the default with no chip to read: apple7, and the one warning that says so', () => {
    expect(prepareExec({ profile: resolveProfile(), command: 'true', args: [] }, 'linux')).toEqual({
      injector: injectorPath(),
      resolved: resolveCommand('true'),
      profile: resolveProfile('apple7'),
      warnings: [
        {
          code: 'host-unknown-fallback',
          message:
            'host-family claims the host chip’s own family, but this host’s chip is unknown (it reports no machdep.cpu.brand_string): profile apple7 is used instead (name a profile to choose another)',
        },
      ],
      unpatched: null,
    });
  });

  it('profile host with no chip to read: refused (ERR_HOST_UNKNOWN), or run unpatched with --allow-unpatched, never a guess', () => {
    const why =
      'host claims the host chip’s own answers, but this host’s chip is unknown (it reports no machdep.cpu.brand_string), so nothing is claimed rather than a guess';
    expect(thrown(() => prepareExec({ profile: resolveProfile('host'), command: 'true', args: [] }, 'linux'))).toEqual(
      new RefusedError(`${why} (--allow-unpatched runs the program unpatched)`, 'ERR_HOST_UNKNOWN'),
    );
    expect(
      prepareExec({ profile: resolveProfile('host'), command: 'true', args: [], allowUnpatched: true }, 'linux'),
    ).toEqual({
      injector: null,
      resolved: resolveCommand('true'),
      warnings: [],
      unpatched: `${why}. Running true unpatched (--allow-unpatched).`,
    });
  });
});
