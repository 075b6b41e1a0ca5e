// exec asks the system tools by absolute path (lib/exec/system-tools.ts): with an empty PATH entry, which libuv reads
// as the current folder, a `codesign` or `ps` planted there never runs. The macOS branches are pure functions of their
// inputs, so they run here with platform 'darwin'.
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { injectionBlocker } from '../../lib/exec/codesign.js';
import { processGroupsWithoutAddon } from '../../lib/exec/signals.js';
import { SYSTEM_TOOLS } from '../../lib/exec/system-tools.js';

let dir: string;
let savedPath: string | undefined;
let savedCwd: string;

/** A planted tool: records that it ran, then prints what the real one would (`flags=0x800` for codesign). */
function plant(name: string): string {
  const marker = path.join(dir, `${name}.ran`);
  writeFileSync(
    path.join(dir, name),
    `#!/bin/sh\ntouch '${marker}'\necho 'CodeDirectory v=20500 size=1 flags=0x800(restrict) hashes=1+0' >&2\necho '1 1 1'\n`,
    { mode: 0o755 },
  );
  return marker;
}

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'mcs-planted-'));
  savedPath = process.env.PATH;
  savedCwd = process.cwd();
  process.chdir(dir);
  // A trailing empty entry: the current folder, to libuv's search.
  process.env.PATH = `${savedPath}:`;
});

afterEach(() => {
  process.chdir(savedCwd);
  process.env.PATH = savedPath;
});

it('names each tool by an absolute path', () => {
  expect(Object.values(SYSTEM_TOOLS).every((p) => path.isAbsolute(p))).toBe(true);
});

it('a codesign planted in the current folder never runs when exec checks a program for macOS', () => {
  const marker = plant('codesign');
  const program = path.join(dir, 'program');
  writeFileSync(program, '\x7fELF not really', { mode: 0o755 });
  expect(injectionBlocker(program, 'darwin')).toBe(null);
  expect(existsSync(marker)).toBe(false);
});

it('a ps planted in the current folder never runs when exec asks for process groups the macOS way', () => {
  const marker = plant('ps');
  processGroupsWithoutAddon(process.pid, 'darwin');
  expect(existsSync(marker)).toBe(false);
});
