// engineArch (lib/engines/common.ts): which build of an engine runs on a host, the fact the residency and
// shared-buffer rules branch on, as a whole value for each kind of host.
import { describe, expect, it } from 'vitest';
import { engineArch } from '../../lib/engines/common.js';
import { loadSnapshot, reportFromSnapshot } from '../../lib/device/snapshots.js';
import type { HostInfo } from '../../lib/device/types.js';

const host = reportFromSnapshot(loadSnapshot('m1-ultra-bare-metal')).host!;
const on = (facts: Partial<HostInfo>): HostInfo => ({ ...host, ...facts });

describe('engineArch', () => {
  it.each<[string, HostInfo | null, ReturnType<typeof engineArch>]>([
    [
      'an arm64 host runs the arm64 build',
      on({ arch: 'arm64', translated: false }),
      { arch: 'arm64', text: 'arm64 host, not translated: an arm64 build' },
    ],
    [
      'an x86_64 host runs the x86_64 build',
      on({ arch: 'x86_64', translated: false }),
      { arch: 'x86_64', text: 'x86_64 host: an x86_64 build' },
    ],
    [
      'under Rosetta the x86_64 build runs, whatever the machine is',
      on({ arch: 'arm64', translated: true }),
      { arch: 'x86_64', text: 'under Rosetta (sysctl.proc_translated=1): an x86_64 build' },
    ],
    [
      'an unknown architecture is unknown (assumed arm64 by the rules)',
      on({ arch: null, translated: null }),
      { arch: null, text: 'build architecture unknown (assumed arm64)' },
    ],
    ['no host at all is unknown too', null, { arch: null, text: 'build architecture unknown (assumed arm64)' }],
  ])('%s', (_what, h, expected) => {
    expect(engineArch(h)).toEqual(expected);
  });
});
