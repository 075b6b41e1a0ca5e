import type { DoctorProgress } from '../doctor/types.js';

/**
 * doctor's progress on a terminal: one line, rewritten as each probe starts and at least once a second while it runs
 * (the probes run in a child process, so this process's timer keeps turning), with the time since doctor began.
 */
export function progressLine(
  stream: NodeJS.WriteStream,
  now: () => number = Date.now,
  tickMs = 1000,
): { show: (event: DoctorProgress) => void; done(): void } {
  const start = now();
  let current: DoctorProgress | null = null;
  const render = () => {
    if (current === null) return;
    const { device, devices, probe, run } = current;
    const seconds = ((now() - start) / 1000).toFixed(1);
    const where = devices > 1 ? `device ${device}, ` : '';
    // \r and "erase line": the same line each time, never a scrolling log.
    stream.write(`\r\x1b[Kdoctor: ${where}${probe} (${run} run) … ${seconds} s`);
  };
  const ticker = setInterval(render, tickMs);
  // The line never keeps the process alive on its own.
  ticker.unref();
  return {
    show(event) {
      current = event;
      render();
    },
    done() {
      clearInterval(ticker);
      if (current !== null) stream.write('\r\x1b[K');
    },
  };
}
