import type { ProbeListener } from '../doctor/run.js';

/**
 * doctor's progress on a terminal: one line, rewritten as each probe starts, with the time since doctor began.
 * The native probes block this thread, so the line shows the probe that is running until the next one starts.
 */
export function progressLine(
  stream: NodeJS.WriteStream,
  now: () => number = Date.now,
): { show: ProbeListener; done(): void } {
  const start = now();
  let shown = false;
  return {
    show({ device, devices, probe, run }) {
      const seconds = ((now() - start) / 1000).toFixed(1);
      const where = devices > 1 ? `device ${device}, ` : '';
      // \r and "erase line": the same line each time, never a scrolling log.
      stream.write(`\r\x1b[Kdoctor: ${where}${probe} (${run} run) … ${seconds} s`);
      shown = true;
    },
    done() {
      if (shown) stream.write('\r\x1b[K');
    },
  };
}
