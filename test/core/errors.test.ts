import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import * as errors from '../../lib/core/errors.js';
import * as api from '../../lib/index.js';
import { root } from '../support/helpers.js';

// Every code belongs to a class of its own (issue: the base class is never thrown by itself). One instance of each
// class per code it carries: the class name, the code and the message.
const ONE_OF_EACH: errors.PackageError[] = [
  new errors.InvalidOptionsError('x', 'm'),
  new errors.InvalidProfileError(null, 'm'),
  new errors.SnapshotNotFoundError('m'),
  new errors.InvalidSnapshotError(null, 'm'),
  new errors.InvalidReportError(null, 'm'),
  new errors.RefusedError('m'),
  new errors.RefusedError('m', 'ERR_INJECTION_BLOCKED'),
  new errors.RefusedError('m', 'ERR_HOST_UNKNOWN'),
  new errors.RefusedError('m', 'ERR_MLX_ARCHITECTURE_REFUSED'),
  new errors.RefusedError('m', 'ERR_ABOVE_HARDWARE'),
  new errors.UnsupportedPlatformError('m'),
  new errors.NativeError('ERR_HOOK_FAILED', 'm'),
  new errors.NativeError('ERR_VERIFICATION_FAILED', 'm'),
  new errors.NativeError('ERR_NO_DEVICE', 'm'),
  new errors.NativeError('ERR_NATIVE_UNAVAILABLE', 'm'),
  new errors.NativeError('ERR_DOCTOR_RUNNER', 'm'),
  new errors.NativeError('ERR_CHILD_HOST', 'm'),
  new errors.ProfileActiveError('m'),
  new errors.SpawnError('ERR_COMMAND_NOT_FOUND', 'm'),
  new errors.SpawnError('ERR_SPAWN', 'm'),
  new errors.TraceFileError('m'),
  new errors.FileError('m'),
  new errors.UsageError('m'),
];

/** The codes of docs/api.md's error table, in its order, with the class each row names. */
function readmeErrorTable(): [string, string][] {
  const readme = readFileSync(path.join(root, 'docs', 'api.md'), 'utf8');
  const rows: [string, string][] = [];
  for (const line of readme.split('\n')) {
    const m = /^\| `(\w+Error)` \| ((?:`ERR_\w+`(?:, )?)+) \|/.exec(line);
    if (m) for (const code of m[2]!.matchAll(/`(ERR_\w+)`/g)) rows.push([m[1]!, code[1]!]);
  }
  return rows;
}

describe('error classes', () => {
  it('each code has exactly one class, and each class its own name', () => {
    expect(ONE_OF_EACH.map((e) => [e.constructor.name, e.name, e.code])).toEqual(
      ONE_OF_EACH.map((e) => [e.constructor.name, e.constructor.name, e.code]),
    );
    const owners = new Map<string, Set<string>>();
    for (const e of ONE_OF_EACH) owners.set(e.code, (owners.get(e.code) ?? new Set()).add(e.name));
    expect([...owners.values()].filter((names) => names.size !== 1)).toEqual([]);
    expect(ONE_OF_EACH.every((e) => e instanceof errors.MetalCapShimError && e.name !== 'MetalCapShimError')).toBe(
      true,
    );
  });

  it('docs/api.md documents every code under the class that throws it, and no other', () => {
    expect(readmeErrorTable().sort()).toEqual(ONE_OF_EACH.map((e) => [e.name, e.code] as [string, string]).sort());
  });

  it('every class is exported from the package root', () => {
    const exported = new Set(Object.keys(api));
    expect([...new Set(ONE_OF_EACH.map((e) => e.name))].filter((name) => !exported.has(name))).toEqual([]);
  });
});
