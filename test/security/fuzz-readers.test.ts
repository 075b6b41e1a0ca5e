// Every reader of other people's data, fed a valid document with one value replaced, at every path, by a hostile value
// of every JSON type (or removed): each answer is a typed error (a MetalCapShimError naming what is wrong) or a result
// that what reads it next takes without a crash (a snapshot's report is formatted, a field report is tabled, a cache
// file is a hit or a miss with its reason, a runner line is accepted). A TypeError, a RangeError or any other raw
// error is a finding, listed with its reader, path and value.
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildMatrix, fieldReport, matrixTable, type FieldReport } from '../../lib/audit/field-report.js';
import { checkBenchResult } from '../../lib/bench/result.js';
import { MetalCapShimError } from '../../lib/core/errors.js';
import { loadSnapshot, reportFromSnapshot } from '../../lib/device/snapshots.js';
import { cacheFileFor, cacheKeyFor, readCache, writeCache } from '../../lib/doctor/cache.js';
import { doctor } from '../../lib/doctor/index.js';
import { parseRunnerLine, RunnerSession } from '../../lib/doctor/run.js';
import { formatReport } from '../../lib/format/text.js';
import { stylerFor } from '../../lib/format/style.js';
import { resolveProfile } from '../../lib/patch/profiles.js';
import { validateSnapshot } from '../../lib/tables.js';
import { describeSim, requireSimBuild, root, runCli } from '../support/helpers.js';

const STOCK = 'vz-guest-m1-ultra-tahoe-stock';
const plain = stylerFor({ isTTY: false } as NodeJS.WriteStream, {}, 'never');

/** Hostile values of every JSON type: what a file someone sent could hold anywhere. */
const HOSTILE: readonly unknown[] = [
  null,
  true,
  false,
  0,
  -1,
  -0.5,
  1e308,
  2 ** 53 + 2,
  '',
  'x',
  '\u001b]0;t\u0007\u202e\u200b',
  '__proto__',
  'a'.repeat(5000),
  [],
  [null],
  [[[[]]]],
  {},
  JSON.parse('{"__proto__":{"polluted":1},"constructor":{"prototype":1},"toString":1}'),
];
const REMOVED = Symbol('removed');

type Path = (string | number)[];

/** Every path of a JSON value, the value itself first; of an array, its first two elements only. */
function pathsOf(value: unknown, at: Path = []): Path[] {
  const out: Path[] = [at];
  if (Array.isArray(value)) for (const [i, v] of value.slice(0, 2).entries()) out.push(...pathsOf(v, [...at, i]));
  else if (typeof value === 'object' && value !== null)
    for (const [k, v] of Object.entries(value)) out.push(...pathsOf(v, [...at, k]));
  return out;
}

/** A deep copy of `doc` with the value at `at` replaced (or removed). */
function mutated(doc: unknown, at: Path, value: unknown): unknown {
  const copy = JSON.parse(JSON.stringify(doc)) as unknown;
  if (at.length === 0) return value === REMOVED ? undefined : value;
  let parent = copy as Record<string | number, unknown>;
  for (const key of at.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
  const last = at.at(-1)!;
  if (value === REMOVED) {
    if (Array.isArray(parent)) parent.splice(last as number, 1);
    else delete parent[last];
  } else Object.defineProperty(parent, last, { value, enumerable: true, writable: true, configurable: true });
  return copy;
}

/**
 * What `read` (the reader and what reads its result next) answered to each mutation of `doc`: how many were typed
 * errors, how many results, and one line per distinct raw error (none expected).
 */
function findings(doc: unknown, read: (input: unknown) => void): { typed: boolean; accepted: boolean; raw: string[] } {
  const raw = new Set<string>();
  let typed = 0;
  let accepted = 0;
  for (const at of pathsOf(doc))
    for (const value of [...HOSTILE, REMOVED]) {
      const input = mutated(doc, at, value);
      try {
        read(input);
        accepted++;
      } catch (err) {
        if (err instanceof MetalCapShimError) {
          typed++;
          continue;
        }
        const shown = value === REMOVED ? 'removed' : JSON.stringify(value)?.slice(0, 40);
        raw.add(
          `${at.join('.') || '(root)'} = ${shown}: ${(err as Error)?.constructor?.name}: ${(err as Error)?.message?.slice(0, 120)}`,
        );
      }
    }
  // Both kinds of answer were seen (the mutations reached the checks, and not every value is refused).
  return { typed: typed > 0, accepted: accepted > 0, raw: [...raw] };
}

const CLEAN = { typed: true, accepted: true, raw: [] };

describe('readers of other people’s files, over hostile values at every path', () => {
  it('snapshot: validateSnapshot, then the probe report formatted', () => {
    const snapshot = JSON.parse(JSON.stringify(loadSnapshot(STOCK)));
    expect(
      findings(snapshot, (input) => formatReport(reportFromSnapshot(validateSnapshot(input, 'fuzz')), plain)),
    ).toEqual(CLEAN);
  });

  it('profile: resolveProfile', () => {
    const profile = JSON.parse(JSON.stringify(resolveProfile('cua-release')));
    expect(findings(profile, (input) => resolveProfile(input as never))).toEqual(CLEAN);
  });

  it('field report: buildMatrix, then its Markdown table', async () => {
    const report = JSON.parse(JSON.stringify(await fieldReport({ snapshot: STOCK }))) as FieldReport;
    expect(findings(report, (input) => matrixTable(buildMatrix([{ where: 'fuzz.json', report: input }])))).toEqual(
      CLEAN,
    );
  });

  it('doctor cache: readCache of a file of ours, a hit or a miss with its reason, never a throw', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'mcs-fuzz-cache-'));
    chmodSync(dir, 0o700);
    const replayed = await doctor({ snapshot: STOCK, cache: false });
    const report = reportFromSnapshot(loadSnapshot(STOCK), { allDevices: true });
    const device = report.devices[0]!;
    const key = cacheKeyFor(report, device);
    const file = writeCache(key, replayed.devices[0]!, '2026-08-09T10:00:00.000Z', dir);
    expect(file).toBe(cacheFileFor(key, dir));
    const entry = JSON.parse(JSON.stringify(readCache(key, device, dir).entry));
    let misses = 0;
    expect(entry).not.toBeNull();
    expect(
      findings(entry, (input) => {
        writeFileSync(file, input === undefined ? '' : JSON.stringify(input), { mode: 0o600 });
        const read = readCache(key, device, dir);
        if (read.entry === null && typeof read.ignored !== 'string') throw new Error('a miss without its reason');
        if (read.entry === null) misses++;
      }),
      // readCache never throws: an unusable file is a miss with its reason.
    ).toEqual({ ...CLEAN, typed: false });
    expect(misses).toBeGreaterThan(0);
  });

  it('doctor runner lines: parseRunnerLine, then the session takes it', () => {
    const report = reportFromSnapshot(loadSnapshot(STOCK), { allDevices: true });
    const messages = [
      { type: 'start', device: 0, devices: 1, probe: 'bfloat', run: 'stock' },
      {
        type: 'outcome',
        device: 0,
        run: 'patched',
        outcome: {
          id: 'bfloat',
          status: 'pass',
          detail: 'd',
          ms: 1,
          compileMs: 0,
          buildFailed: false,
          commandBufferError: null,
          gpuTimedOut: false,
          provenThreadgroupMemory: null,
          acceptedThreadgroupMemory: null,
          failedThreadgroupMemory: null,
          bufferLength: null,
          maxAbsError: 0,
        },
      },
      { type: 'stock', report },
      { type: 'patched', devices: null, why: 'w' },
      { type: 'restored', restoredHooks: [{ className: 'C', selector: 's' }], conflicts: [] },
      { type: 'no-such-device', count: 1 },
      { type: 'unsupported', reason: 'no-device', detail: 'd', report: null },
    ];
    for (const m of messages)
      expect(
        findings(m, (input) => {
          const line = JSON.stringify(input);
          const message = line === undefined ? null : parseRunnerLine(line);
          if (message !== null) new RunnerSession().accept(message);
        }),
        m.type,
      ).toEqual({ ...CLEAN, typed: m.type !== 'done' });
  });
});

describeSim('bench results: checkBenchResult', () => {
  let result: unknown;
  beforeAll(() => {
    requireSimBuild();
    const dir = mkdtempSync(path.join(tmpdir(), 'mcs-fuzz-bench-'));
    const tool = path.join(dir, 'llama-bench');
    writeFileSync(
      tool,
      `#!/bin/sh\nts=100; [ -n "$LD_PRELOAD" ] && ts=200\necho '[{"build_commit":"abc1234","build_number":7010,"backends":"CPU","model_filename":"tiny.gguf","model_type":"llama ?B F32","n_prompt":512,"n_gen":0,"avg_ts":'$ts',"stddev_ts":1}]'\n`,
    );
    chmodSync(tool, 0o755);
    const r = runCli(['bench', '--rounds', '1', '--json', '--', tool], {
      METAL_CAP_SHIM_SIM_SNAPSHOT: STOCK,
    });
    expect(r.status, r.stderr).toBe(0);
    result = JSON.parse(r.stdout);
  });

  it('a typed error or a bench result, never a raw error', () => {
    expect(findings(result, (input) => checkBenchResult(input, 'fuzz.json'))).toEqual(CLEAN);
    expect(root).toBeTruthy();
  });
});
