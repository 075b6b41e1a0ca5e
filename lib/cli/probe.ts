import { formatReport } from '../format.js';
import { probe, probeSnapshot } from '../probe.js';
import { EXIT, out, printJson, styler, text, type Command } from './shared.js';
import { bundledSnapshotsHelp } from './snapshot-help.js';

const command: Command = {
  help: () => `Usage: metal-cap-shim probe [--json] [--all-devices] [--snapshot NAME|PATH]

  --json           machine-readable report (schema metal-cap-shim/report@1)
  --all-devices    every device, not only the default one
  --snapshot S     a recorded snapshot (bundled name or .json path) instead of this machine; works on any OS
Exit code 1 when nothing can be asked here (not macOS, no device, no native module): the report says why.

${bundledSnapshotsHelp()}`,
  options: {
    json: { type: 'boolean' },
    'all-devices': { type: 'boolean' },
    snapshot: { type: 'string' },
  },
  run({ values }) {
    const opts = { allDevices: values['all-devices'] === true };
    const snapshot = text(values, 'snapshot');
    const report = snapshot !== undefined ? probeSnapshot(snapshot, opts) : probe(opts);
    if (values.json) printJson(report);
    else out(formatReport(report, styler()));
    return report.supported ? EXIT.ok : EXIT.failure;
  },
};

export default command;
