import { listSnapshots } from '../device/snapshots.js';

/** The help line that names the bundled snapshots, so `--help` shows what `--snapshot` accepts by name. */
export function bundledSnapshotsHelp(): string {
  let names: string[];
  try {
    names = listSnapshots();
  } catch {
    names = [];
  }
  return `Bundled snapshots: ${names.length ? names.join(', ') : '(none found)'}
  --snapshot also takes a .json path: a snapshot file, a \`metal-cap-shim probe --json\` report, or a field report
  (\`metal-cap-shim report --json\`).`;
}
