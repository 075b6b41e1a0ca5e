// Small defences from the two-user review: bounded arrays, an empty program name, no home folder, and a temporary
// name nobody can plant first.
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildMatrix, matrixMarkdown } from '../../lib/audit/field-report.js';
import { INPUT_ARRAY_LIMIT } from '../../lib/core/input.js';
import { writeFileSafely } from '../../lib/core/safefs.js';
import { cacheKeyFor, readCache, writeCache } from '../../lib/doctor/cache.js';
import { commandError, resolveCommand } from '../../lib/exec/command.js';
import { resolveProfile } from '../../lib/patch/profiles.js';
import { runCli } from '../support/helpers.js';

function sparse(length: number): unknown[] {
  const a: unknown[] = [];
  a.length = length;
  return a;
}

describe('arrays are bounded before they are walked', () => {
  it.each([
    [
      'resolveProfile families',
      () => resolveProfile({ families: sparse(2 ** 32 - 1) } as never),
      'ERR_INVALID_PROFILE',
    ],
    ['buildMatrix', () => buildMatrix(sparse(2 ** 32 - 1) as never), 'ERR_INVALID_REPORT'],
    [
      'matrixMarkdown profiles',
      () =>
        matrixMarkdown({
          schema: 'metal-cap-shim/matrix@2',
          profiles: sparse(2 ** 32 - 1),
          rows: [],
          duplicates: [],
        } as never),
      'ERR_INVALID_OPTIONS',
    ],
  ])('%s: a sparse array of 2^32 − 1 elements is a typed error at once', (_name, call, code) => {
    const started = Date.now();
    expect(call).toThrow(expect.objectContaining({ code }));
    expect(call).toThrow(`has 4294967295 elements, more than the ${INPUT_ARRAY_LIMIT}`);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('an array at the limit is read, one element more is refused', () => {
    expect(() => buildMatrix(sparse(INPUT_ARRAY_LIMIT) as never)).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_REPORT' }),
    );
    expect(() => buildMatrix(sparse(INPUT_ARRAY_LIMIT) as never)).not.toThrow('elements, more than');
    expect(() => buildMatrix(sparse(INPUT_ARRAY_LIMIT + 1) as never)).toThrow(
      `has ${INPUT_ARRAY_LIMIT + 1} elements, more than the ${INPUT_ARRAY_LIMIT}`,
    );
  });
});

describe('the program names . and ..', () => {
  it.each(['.', '..'])('%s cannot be run (126), and the message names no PATH folder', (name) => {
    expect(resolveCommand(name, { PATH: tmpdir() })).toBe(null);
    const message = `cannot run ${name}: it names a folder (the current one or its parent), not a program`;
    expect(commandError(name, { PATH: tmpdir() })).toMatchObject({ code: 'ERR_SPAWN', message });
    const r = runCli(['exec', '--allow-unpatched', '--', name]);
    expect([r.status, r.stderr]).toEqual([126, `metal-cap-shim: ERR_SPAWN: ${message}\n`]);
  });
});

describe('bench with a program that is not there', () => {
  it('exits 127 as exec does, and 126 for one that cannot be run', () => {
    const sim = { METAL_CAP_SHIM_SIM_SNAPSHOT: 'vz-guest-m1-ultra-tahoe-stock' };
    const missing = runCli(['bench', '--', '/no/such/llama-bench'], sim);
    expect([missing.status, missing.stderr]).toEqual([
      127,
      'metal-cap-shim: ERR_COMMAND_NOT_FOUND: command not found: /no/such/llama-bench\n',
    ]);
    const folder = runCli(['bench', '--', tmpdir()], sim);
    expect([folder.status, folder.stderr.split(':')[1]]).toEqual([126, ' ERR_SPAWN']);
  });
});

describe('an empty program name', () => {
  it('is not found (127), never the PATH folder it would be joined to', () => {
    expect(resolveCommand('', { PATH: tmpdir() })).toBe(null);
    expect(commandError('', { PATH: tmpdir() })).toMatchObject({
      code: 'ERR_COMMAND_NOT_FOUND',
      message: 'command not found: the program name is empty',
    });
    const r = runCli(['exec', '--allow-unpatched', '--', '']);
    expect([r.status, r.stderr]).toEqual([
      127,
      'metal-cap-shim: ERR_COMMAND_NOT_FOUND: command not found: the program name is empty\n',
    ]);
  });
});

describe('no usable home folder', () => {
  it('caches nothing in the current folder, reads nothing from it, and says why once', () => {
    const key = cacheKeyFor(
      {
        schema: 'metal-cap-shim/report@1',
        host: { model: 'VirtualMac2,1', osVersion: '26.5.2', osBuild: null, arch: 'arm64', chip: null },
        source: 'simulated',
        snapshot: 'x',
      } as never,
      { index: 0, name: 'Apple Paravirtual device', className: 'AppleParavirtDevice' } as never,
    );
    const cwd = process.cwd();
    const here = mkdtempSync(path.join(tmpdir(), 'mcs-homeless-'));
    process.chdir(here);
    try {
      const relative = path.join('.cache', 'metal-cap-shim');
      expect(() => writeCache(key, {} as never, '2026-12-02T00:00:00Z', relative)).toThrow(
        'the cache folder .cache/metal-cap-shim is not an absolute path (there is no usable home folder: HOME is empty or unset, and XDG_CACHE_HOME is not set), so nothing is cached',
      );
      expect(readCache(key, {} as never, relative)).toMatchObject({ entry: null, ignored: null });
      expect(readdirSync(here)).toEqual([]);
    } finally {
      process.chdir(cwd);
    }
  });
});

describe('writeFileSafely', () => {
  it('replaces a file through a temporary name nobody can guess: a file planted under the old, predictable name changes nothing', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'mcs-safe-'));
    const file = path.join(dir, 'trace.json');
    writeFileSync(file, 'old');
    // The name the write used to take: pid and time. Plant every such name for the next seconds.
    const base = Date.now();
    for (let ms = 0; ms < 2000; ms += 1) {
      writeFileSync(path.join(dir, `.trace.json.${process.pid}.${(base + ms).toString(36)}.tmp`), 'planted');
    }
    writeFileSafely(file, 'new');
    expect(readFileSync(file, 'utf8')).toBe('new');
    expect(readdirSync(dir).filter((f) => !f.startsWith('.trace.json.'))).toEqual(['trace.json']);
  });
});
