// The simulated Metal's own loader, seen from a program that links it directly (test/native/consumer.mm): the
// snapshots test/fuzz/ found or kept as regressions must load no device and say why, never crash the program. And its
// blit fill (test/native/blit_fill.mm), which llama.cpp's device initialisation encodes.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { buildConsumer, describeSim, requireSimBuild, root } from '../support/helpers.js';

const regressions = path.join(root, 'test', 'fuzz', 'regressions', 'sim_snapshot_fuzz');

describeSim('simulated Metal: snapshots it cannot lay out as device classes', () => {
  let consumer: string;
  beforeAll(() => {
    requireSimBuild();
    consumer = buildConsumer();
  });

  it('the regression inputs are the five kept here', () => {
    expect(readdirSync(regressions).sort()).toEqual([
      'classname-base-class.json',
      'classname-nsobject.json',
      'defaultobjectclass-nsobject.json',
      'subclassof-cycle.json',
      'subclassof-self.json',
    ]);
  });

  it.each([
    ['classname-nsobject.json', "sim-metal: className 'NSObject' is an existing class that is not a simulated device"],
    [
      'classname-base-class.json',
      "sim-metal: className '_MTLDevice' is an existing class that is not a simulated device",
    ],
    [
      'defaultobjectclass-nsobject.json',
      "sim-metal: defaultObjectClass 'NSObject' is an existing class that is not a simulated device",
    ],
    ['subclassof-cycle.json', "sim-metal: simulation.subclassOf of 'MTLIGAccelDevice' loops back to itself"],
    ['subclassof-self.json', "sim-metal: simulation.subclassOf of 'MTLIGAccelDevice' loops back to itself"],
  ])('%s: no device, one line on stderr, exit 0', (file, message) => {
    const r = spawnSync(consumer, ['--all'], {
      encoding: 'utf8',
      env: { ...process.env, METAL_CAP_SHIM_SIM_SNAPSHOT: path.join(regressions, file) },
      timeout: 30_000,
    });
    expect({ status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr }).toEqual({
      status: 0,
      signal: null,
      stdout: '[]\n',
      stderr: `${message}\n`,
    });
  });

  it('the default device alone is refused the same way', () => {
    const r = spawnSync(consumer, [], {
      encoding: 'utf8',
      env: { ...process.env, METAL_CAP_SHIM_SIM_SNAPSHOT: path.join(regressions, 'subclassof-cycle.json') },
      timeout: 30_000,
    });
    expect([r.status, r.stdout]).toEqual([0, '[]\n']);
  });
});

describeSim("simulated Metal: the blit encoder's fill", () => {
  let program: string;
  beforeAll(() => {
    requireSimBuild();
    program = buildConsumer('blit_fill');
  });

  /** One command buffer per range (`location:length`) on a fresh 16-byte buffer, filled with 0xAB. */
  const fill = (...ranges: string[]) => {
    const r = spawnSync(program, ranges, {
      encoding: 'utf8',
      env: { ...process.env, METAL_CAP_SHIM_SIM_SNAPSHOT: 'vz-guest-m1-ultra-tahoe-stock' },
      timeout: 30_000,
    });
    expect([r.status, r.stderr]).toEqual([0, '']);
    return r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as unknown);
  };
  const bytes = (from: number, to: number) => Array.from({ length: 16 }, (_, i) => (i >= from && i < to ? 0xab : 0));
  const PAST_END = 'simulated: a blit fill past the end of its buffer';

  it('a fill then a read sees the filled bytes and no others; a fill up to the last byte completes', () => {
    expect(fill('4:8', '8:8', '0:0')).toEqual([
      { status: 4, error: null, bytes: bytes(4, 12) },
      { status: 4, error: null, bytes: bytes(8, 16) },
      { status: 4, error: null, bytes: bytes(0, 0) },
    ]);
  });

  it('a fill one byte past the end, or starting past it, fails the command buffer and writes nothing', () => {
    expect(fill('9:8', '17:0')).toEqual([
      { status: 5, error: PAST_END, bytes: bytes(0, 0) },
      { status: 5, error: PAST_END, bytes: bytes(0, 0) },
    ]);
  });
});
