/**
 * The probe runner's entry (dist/doctor-runner.js), started by run.ts as the host allows (lib/core/node-child.ts:
 * `process.execPath dist/doctor-runner.js`, or Electron's utility process). Reads the checked options as JSON
 * (readChildInput) and writes RunnerMessage lines on standard output; see runner.ts.
 */
import { writeSync } from 'node:fs';
import { isUtilityProcess, readChildInput } from '../core/node-child.js';
import type { CheckedDoctorOptions } from './options.js';
import { runProbes, type RunnerMessage } from './runner.js';

/**
 * Each line is written whole and at once: a probe that then takes the process down (abort() in Metal) must not take
 * the line that names it along. Where standard output is a non-blocking pipe (macOS), a full pipe is waited out.
 */
function writeLine(message: RunnerMessage): void {
  const bytes = Buffer.from(`${JSON.stringify(message)}\n`);
  let at = 0;
  while (at < bytes.length) {
    try {
      at += writeSync(1, bytes, at);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
    }
  }
}

readChildInput().then((input) => {
  runProbes(JSON.parse(input) as CheckedDoctorOptions, writeLine);
  // Its parent port would keep a utility process alive; every line is written already.
  if (isUtilityProcess()) process.exit(0);
});
