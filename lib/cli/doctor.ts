import { doctor, type DoctorOptions } from '../doctor/index.js';
import type { DoctorReport } from '../doctor/types.js';
import { formatDoctor } from '../format/doctor.js';
import { MMAP_SIZE, TIMEOUT_MS } from '../doctor/probes.js';
import { mmapOptions, numberFlag } from './doctor-options.js';
import { progressLine } from './progress.js';
import { profileArgument, profileHelp } from './profile-option.js';
import { EXIT, outText, printJson, styler, text, type Command } from './shared.js';

import { bundledSnapshotsHelp } from './snapshot-help.js';

const command: Command = {
  help: () => `Usage: metal-cap-shim doctor [--json] [--profile P] [--mmap-file FILE | --mmap-size BYTES] [--device N]
                             [--timeout-ms N] [--force] [--allow-above-hardware] [--snapshot NAME|PATH]

Runs real Metal work on each device: SIMD-group reduction and matrix, bfloat, threadgroup memory, a GPU read
through a NoCopy buffer over a file-backed mmap, a residency set, and a buffer placed in a heap. Each result is
checked against the CPU. The probes run in a child process: a probe that hangs past its deadline, crashes or
aborts ends as 'aborted', never this command, and after a GPU hang the device's later probes are skipped.
The capability probes run with stock answers, then again with the profile installed there.
Prints each device's verified profile (what profile auto applies) and the engine settings that avoid the
faults found.

  --json             machine-readable result (schema metal-cap-shim/doctor@1)
  ${profileHelp(19)}
                     The capability probes run a second time under it.
  --mmap-file FILE   map this file (e.g. your model), read only, instead of a generated one
  --mmap-size BYTES  size of the generated file, deleted after (default 1G; 1M to 64G, a multiple of
                     ${MMAP_SIZE.multipleOf}; K, M and G suffixes are binary)
  --device N         only device N (MTLCopyAllDevices order)
  --timeout-ms N     deadline per probe (default ${TIMEOUT_MS.default}; ${TIMEOUT_MS.min} to ${TIMEOUT_MS.max})
  --force            on a host that is not a VM, also run under a raising profile (its hooks are removed after)
  --allow-above-hardware
                     also dispatch threadgroup sizes above what the GPU can prove (32K on an Apple GPU), in a
                     VM too: undefined on the host's GPU, and at best accepted, unverifiable (off by default)
  --snapshot S       replay the result a snapshot records (bundled name or .json path), on any OS
Results are cached for profile auto. On a terminal, stderr shows which probe is running (not with --json).

Exit codes (every command's): 0 no probe found a fault (each is proven, absent from this OS, or says why it
taught nothing); 1 a probe found a fault (with --snapshot: the recording holds one, and the output says it was
replayed); 2 usage (an unknown option, a bad number, a profile or snapshot that cannot be used); 4 no Metal here
(no device, the native module will not load).

${bundledSnapshotsHelp()}`,
  options: {
    json: { type: 'boolean' },
    profile: { type: 'string' },
    'mmap-file': { type: 'string' },
    'mmap-size': { type: 'string' },
    device: { type: 'string' },
    'timeout-ms': { type: 'string' },
    force: { type: 'boolean' },
    'allow-above-hardware': { type: 'boolean' },
    snapshot: { type: 'string' },
  },
  async run({ values }) {
    const profile = text(values, 'profile');
    const device = text(values, 'device');
    const timeout = text(values, 'timeout-ms');
    const snapshot = text(values, 'snapshot');
    // A terminal sees which probe runs, ticking each second (a large --mmap-size takes seconds); a pipe or --json gets
    // nothing extra.
    const progress = values.json || !process.stderr.isTTY ? undefined : progressLine(process.stderr);
    const options: DoctorOptions = {
      ...(profile !== undefined ? { profile: profileArgument(profile) } : {}),
      ...(progress !== undefined ? { onProgress: progress.show } : {}),
      ...mmapOptions(values),
      ...(device !== undefined ? { device: numberFlag('--device', device) } : {}),
      ...(timeout !== undefined ? { timeoutMs: numberFlag('--timeout-ms', timeout) } : {}),
      ...(values.force === true ? { force: true } : {}),
      ...(values['allow-above-hardware'] === true ? { allowAboveHardware: true } : {}),
      ...(snapshot !== undefined ? { snapshot } : {}),
    };
    let report: DoctorReport;
    try {
      report = await doctor(options);
    } finally {
      progress?.done();
    }
    if (!report.supported) throw (await import('../patch/apply.js')).notAppliedError(report.reason, report.detail);
    if (values.json) printJson(report);
    else outText(formatDoctor(report, styler()));
    return report.devices.some((d) => d.faults.length > 0) ? EXIT.finding : EXIT.ok;
  },
};

export default command;
