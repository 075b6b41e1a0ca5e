// lib/cli/snapshot-help.ts: the help lines that name what --snapshot takes, the bundled names from the package itself.
import { describe, expect, it } from 'vitest';
import { bundledSnapshotsHelp } from '../../lib/cli/snapshot-help.js';
import { listSnapshots } from '../../lib/device/snapshots.js';

describe('bundledSnapshotsHelp', () => {
  it('names every bundled snapshot, then the files --snapshot also takes', () => {
    const names = listSnapshots();
    expect(names).toContain('vz-guest-m1-ultra-tahoe-stock');
    expect(bundledSnapshotsHelp().split('\n')).toEqual([
      `Bundled snapshots: ${names.join(', ')}`,
      '  --snapshot also takes a .json path: a snapshot file, a `metal-cap-shim probe --json` report, or a field report',
      '  (`metal-cap-shim report --json`).',
    ]);
  });
});
