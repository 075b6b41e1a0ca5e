import { UsageError } from '../core/errors.js';
import { recordSnapshot, type RecordOptions } from '../audit/record-snapshot.js';
import type { Snapshot } from '../device/snapshots.js';
import { mmapOptions, numberFlag } from './doctor-options.js';
import { progressLine } from './progress.js';
import { EXIT, printJson, text, type Command } from './shared.js';

const command: Command = {
  help: () => `Usage: metal-cap-shim snapshot [--label TEXT] [--with-doctor [--mmap-file F | --mmap-size BYTES]
                                [--timeout-ms N] [--allow-above-hardware]] > my-machine.json

Records this machine (every device's stock answers and the host facts) as a snapshot on stdout, in the bundled
snapshots' format (schema metal-cap-shim/snapshot@1), with the provenance "recorded by metal-cap-shim <version> on
<date>". Read it back anywhere with --snapshot my-machine.json.

  --label TEXT       the snapshot's title, e.g. "M1 Ultra guest, Tahoe 26.5.2"; its id is made from it
  --with-doctor      also run doctor on every device and record its results, so that
                     \`metal-cap-shim doctor --snapshot my-machine.json\` replays them whole
  --mmap-file F      with --with-doctor: doctor maps your model file (read only) for its NoCopy probe
  --mmap-size BYTES  with --with-doctor: size of doctor's generated file (default 1G)
  --timeout-ms N     with --with-doctor: deadline per probe (default 5000)
  --allow-above-hardware
                     with --with-doctor: also dispatch threadgroup sizes above what the GPU can
                     prove, as doctor --allow-above-hardware does (off by default)
  --json             accepted for symmetry: the output is JSON either way
Exit code ${EXIT.noMetal} where there is no Metal device to record.`,
  options: {
    label: { type: 'string' },
    json: { type: 'boolean' },
    'with-doctor': { type: 'boolean' },
    'mmap-file': { type: 'string' },
    'mmap-size': { type: 'string' },
    'timeout-ms': { type: 'string' },
    'allow-above-hardware': { type: 'boolean' },
  },
  async run({ values }) {
    const label = text(values, 'label');
    const timeout = text(values, 'timeout-ms');
    const doctorFlags = {
      ...mmapOptions(values),
      ...(timeout !== undefined ? { timeoutMs: numberFlag('--timeout-ms', timeout) } : {}),
      ...(values['allow-above-hardware'] === true ? { allowAboveHardware: true } : {}),
    };
    const withDoctor = values['with-doctor'] === true;
    if (!withDoctor && Object.keys(doctorFlags).length > 0) {
      throw new UsageError(
        '--mmap-file, --mmap-size, --timeout-ms and --allow-above-hardware are doctor settings: give them with --with-doctor',
      );
    }
    // doctor's probes take seconds: a terminal sees which one runs (stdout carries the JSON).
    const progress = withDoctor && process.stderr.isTTY ? progressLine(process.stderr) : undefined;
    const options: RecordOptions = {
      ...(label !== undefined ? { label } : {}),
      ...(withDoctor ? { doctor: true, ...doctorFlags } : {}),
      ...(progress !== undefined ? { onProgress: progress.show } : {}),
    };
    let snapshot: Snapshot;
    try {
      snapshot = await recordSnapshot(options);
    } finally {
      progress?.done();
    }
    printJson(snapshot);
    return EXIT.ok;
  },
};

export default command;
