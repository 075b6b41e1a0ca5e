import { recordSnapshot } from '../record.js';
import { EXIT, printJson, text, type Command } from './shared.js';

const command: Command = {
  help: () => `Usage: metal-cap-shim snapshot [--label TEXT] > my-machine.json

Records this machine (every device's stock answers and the host facts) as a snapshot on stdout, in the bundled
snapshots' format (schema metal-cap-shim/snapshot@1), with the provenance "recorded by metal-cap-shim <version> on
<date>". Read it back anywhere with --snapshot my-machine.json.

  --label TEXT     the snapshot's title, e.g. "M1 Ultra guest, Tahoe 26.5.2"; its id is made from it
  --json           accepted for symmetry: the output is JSON either way
Exit code 1 where there is no Metal device to record.`,
  options: { label: { type: 'string' }, json: { type: 'boolean' } },
  run({ values }) {
    const label = text(values, 'label');
    printJson(recordSnapshot(label !== undefined ? { label } : {}));
    return EXIT.ok;
  },
};

export default command;
