// Every JSON file the package reads is opened without blocking and checked with fstat before it is read: a FIFO an
// attacker planted under the name is refused at once with a typed error (`-` stays the way to read a pipe), and
// every fact about the file (its date included) comes from the descriptor that was read.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readJsonFile } from '../../lib/core/jsonfile.js';
import { loadSnapshot } from '../../lib/device/snapshots.js';
import { buildConsumer, describeSim, requireSimBuild, root, runCli } from '../support/helpers.js';

const dir = mkdtempSync(path.join(tmpdir(), 'mcs-fifo-'));
const fifo = path.join(dir, 'planted.json');
execFileSync('mkfifo', [fifo]);
const NOT_REGULAR = 'is not a regular file (a FIFO, a socket or a device): give a file, or `-` to read standard input';

describe('a FIFO given as a JSON input', () => {
  it('is refused by the reader at once, without opening it for a writer that never comes', () => {
    const started = Date.now();
    expect(readJsonFile(fifo)).toEqual({ ok: false, problem: NOT_REGULAR });
    expect(readJsonFile('/dev/zero')).toEqual({ ok: false, problem: NOT_REGULAR });
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('is a typed error in every command that reads a file, each within a second or two', () => {
    const cases: [string[], number, string][] = [
      [['audit', '--snapshot', fifo], 2, `snapshot file ${fifo} ${NOT_REGULAR}`],
      [['probe', '--snapshot', fifo], 2, `snapshot file ${fifo} ${NOT_REGULAR}`],
      [['doctor', '--snapshot', fifo], 2, `snapshot file ${fifo} ${NOT_REGULAR}`],
      [
        ['audit', '--snapshot', 'vz-guest-m1-ultra-tahoe-stock', '--profile', fifo],
        2,
        `profile file ${fifo} ${NOT_REGULAR}`,
      ],
    ];
    for (const [args, status, message] of cases) {
      const started = Date.now();
      const r = runCli(args, {}, undefined, { timeout: 10_000 });
      expect([args[0], r.status, r.signal]).toEqual([args[0], status, null]);
      expect(r.stderr).toContain(message);
      expect(Date.now() - started).toBeLessThan(8000);
    }
    const matrix = runCli(['matrix', fifo], {}, undefined, { timeout: 10_000 });
    expect([matrix.status === 0, matrix.signal]).toEqual([false, null]);
    expect(matrix.stderr).toContain(`${fifo} ${NOT_REGULAR}`);
  });

  it('takes a report file’s date from the descriptor it read, not from the path asked again', () => {
    const report = path.join(dir, 'old-report.json');
    const probe = JSON.parse(
      execFileSync(
        process.execPath,
        [path.join(root, 'dist/cli.js'), 'probe', '--json', '--snapshot', 'vz-guest-m1-ultra-tahoe-stock'],
        {
          encoding: 'utf8',
        },
      ),
    ) as Record<string, unknown>;
    writeFileSync(report, JSON.stringify({ ...probe, snapshot: null }));
    const when = new Date('2020-01-02T12:00:00Z');
    utimesSync(report, when, when);
    const read = readJsonFile(report);
    expect(read.ok && read.modified?.toISOString()).toBe(when.toISOString());
    expect(loadSnapshot(report).recorded).toBe('2020-01-02');
    expect(readFileSync(report, 'utf8').length).toBeGreaterThan(0);
  });
});

describeSim('a FIFO as the simulated Metal’s snapshot (METAL_CAP_SHIM_SIM_SNAPSHOT)', () => {
  it('a Metal consumer over the simulation gets no device at once, and the simulation says why', () => {
    requireSimBuild();
    const consumer = buildConsumer();
    const started = Date.now();
    const r = spawnSync(consumer, [], {
      encoding: 'utf8',
      env: { ...process.env, METAL_CAP_SHIM_SIM_SNAPSHOT: fifo },
      timeout: 10_000,
    });
    expect([r.signal, Date.now() - started < 5000]).toEqual([null, true]);
    expect(r.stderr).toContain(
      `sim-metal: cannot read snapshot ${fifo}: not a regular file (a FIFO, a socket or a device)`,
    );
  });
});
