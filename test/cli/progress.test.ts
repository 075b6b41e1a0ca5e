// doctor's progress line on a terminal (lib/cli/progress.ts): rewritten as each probe starts, and ticking while one
// runs, since the probes run in a child process and this process's timers keep turning.
import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { progressLine } from '../../lib/cli/progress.js';

function fakeStream(): { stream: NodeJS.WriteStream; writes: string[] } {
  const writes: string[] = [];
  return { stream: { write: (s: string) => writes.push(s) > 0 } as unknown as NodeJS.WriteStream, writes };
}

it('ticks while a probe runs, with the elapsed time, and stops ticking once done', async () => {
  const { stream, writes } = fakeStream();
  let clock = 1000;
  const line = progressLine(stream, () => clock, 10);
  line.show({ device: 0, devices: 1, probe: 'bfloat', run: 'stock' });
  clock = 3500;
  await sleep(60);
  line.done();
  const count = writes.length;
  await sleep(40);
  expect(writes.length).toBe(count);
  expect(writes[0]).toBe('\r\x1b[Kdoctor: bfloat (stock run) … 0.0 s');
  expect(writes.slice(1, -1).length).toBeGreaterThanOrEqual(2);
  expect(new Set(writes.slice(1, -1))).toEqual(new Set(['\r\x1b[Kdoctor: bfloat (stock run) … 2.5 s']));
  expect(writes.at(-1)).toBe('\r\x1b[K');
});

it('says nothing before the first probe, and clears nothing it never wrote', async () => {
  const { stream, writes } = fakeStream();
  const line = progressLine(stream, Date.now, 5);
  await sleep(30);
  line.done();
  expect(writes).toEqual([]);
});

it('names the device when there are several', () => {
  const { stream, writes } = fakeStream();
  const line = progressLine(stream, () => 0, 1000);
  line.show({ device: 1, devices: 2, probe: 'heap', run: 'patched' });
  line.done();
  expect(writes).toEqual(['\r\x1b[Kdoctor: device 1, heap (patched run) … 0.0 s', '\r\x1b[K']);
});
