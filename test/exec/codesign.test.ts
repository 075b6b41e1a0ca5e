// exec refuses a program with a __RESTRICT,__restrict section (dyld's MachOFile::isRestricted strips DYLD_* from it),
// read from the Mach-O load commands in TypeScript: thin 32- and 64-bit images and universal files, each bounded.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  arm64eOnlyBlocker,
  injectionBlocker,
  machOSections,
  machOSlices,
  restrictSegmentBlocker,
} from '../../lib/exec/codesign.js';

const dir = mkdtempSync(path.join(tmpdir(), 'mcs-restrict-'));

function fixed(text: string): Buffer {
  const b = Buffer.alloc(16);
  b.write(text, 'latin1');
  return b;
}

/** One LC_SEGMENT(_64) with the given sections. */
function segment(is64: boolean, name: string, sections: string[]): Buffer {
  const sectionSize = is64 ? 80 : 68;
  const head = Buffer.alloc(is64 ? 72 : 56);
  head.writeUInt32LE(is64 ? 0x19 : 0x1, 0);
  head.writeUInt32LE(head.length + sections.length * sectionSize, 4);
  fixed(name).copy(head, 8);
  head.writeUInt32LE(sections.length, is64 ? 64 : 48);
  const body = sections.map((s) => {
    const sec = Buffer.alloc(sectionSize);
    fixed(s).copy(sec, 0);
    fixed(name).copy(sec, 16);
    return sec;
  });
  return Buffer.concat([head, ...body]);
}

/** A thin Mach-O image: header (with `cpu`: CPU type and subtype) and load commands (a UUID-like command first). */
function thin(is64: boolean, segments: [string, string[]][], cpu: [number, number] = [0, 0]): Buffer {
  const other = Buffer.alloc(24);
  other.writeUInt32LE(0x1b, 0);
  other.writeUInt32LE(24, 4);
  const cmds = Buffer.concat([other, ...segments.map(([n, s]) => segment(is64, n, s))]);
  const header = Buffer.alloc(is64 ? 32 : 28);
  header.writeUInt32LE(is64 ? 0xfeedfacf : 0xfeedface, 0);
  header.writeUInt32LE(cpu[0], 4);
  header.writeUInt32LE(cpu[1], 8);
  header.writeUInt32LE(segments.length + 1, 16);
  header.writeUInt32LE(cmds.length, 20);
  return Buffer.concat([header, cmds]);
}

/** A universal file: fat_header and fat_arch records (big-endian), the slices laid end to end from 4096. */
function fat(slices: Buffer[]): Buffer {
  const header = Buffer.alloc(8 + slices.length * 20);
  header.writeUInt32BE(0xcafebabe, 0);
  header.writeUInt32BE(slices.length, 4);
  let offset = 4096;
  slices.forEach((s, i) => {
    header.writeUInt32BE(offset, 8 + i * 20 + 8);
    header.writeUInt32BE(s.length, 8 + i * 20 + 12);
    offset += s.length;
  });
  return Buffer.concat([header, Buffer.alloc(4096 - header.length), ...slices]);
}

function file(name: string, bytes: Buffer): string {
  const p = path.join(dir, name);
  writeFileSync(p, bytes, { mode: 0o755 });
  return p;
}

const RESTRICTED: [string, string[]][] = [
  ['__TEXT', ['__text', '__cstring']],
  ['__RESTRICT', ['__restrict']],
];
const PLAIN: [string, string[]][] = [
  ['__TEXT', ['__text']],
  ['__DATA', ['__data']],
];

describe('exec: a program with a __RESTRICT,__restrict section', () => {
  it('reads every section of a thin 64-bit and 32-bit image', () => {
    expect(machOSections(file('thin64', thin(true, RESTRICTED)))).toEqual([
      { segment: '__TEXT', section: '__text' },
      { segment: '__TEXT', section: '__cstring' },
      { segment: '__RESTRICT', section: '__restrict' },
    ]);
    expect(machOSections(file('thin32', thin(false, PLAIN)))).toEqual([
      { segment: '__TEXT', section: '__text' },
      { segment: '__DATA', section: '__data' },
    ]);
  });

  it('refuses a restricted thin image, and any slice of a universal file', () => {
    const thinFile = file('restricted', thin(true, RESTRICTED));
    expect(restrictSegmentBlocker(thinFile)).toEqual({
      reason: `${thinFile} has a __RESTRICT,__restrict section: dyld treats it as restricted and removes DYLD_INSERT_LIBRARIES, so it would run unpatched. Use a build linked without that section, or embed metal-cap-shim as a library.`,
      launchFails: false,
    });
    const universal = file('universal', fat([thin(true, PLAIN), thin(true, RESTRICTED)]));
    expect(restrictSegmentBlocker(universal)?.launchFails).toBe(false);
    expect(restrictSegmentBlocker(file('universal-plain', fat([thin(true, PLAIN), thin(false, PLAIN)])))).toBe(null);
  });

  it('needs both names: a __restrict section elsewhere, or another section of __RESTRICT, is no restriction', () => {
    expect(restrictSegmentBlocker(file('other-seg', thin(true, [['__DATA', ['__restrict']]])))).toBe(null);
    expect(restrictSegmentBlocker(file('other-sect', thin(true, [['__RESTRICT', ['__other']]])))).toBe(null);
    expect(restrictSegmentBlocker(file('plain', thin(true, PLAIN)))).toBe(null);
  });

  it('reads no further than the file or its bounds: a script, a truncated image, a class file, a missing file', () => {
    expect(machOSections(file('script', Buffer.from('#!/bin/sh\necho hi\n')))).toBe(null);
    expect(machOSections(file('truncated', thin(true, RESTRICTED).subarray(0, 40)))).toBe(null);
    const javaClass = Buffer.alloc(16);
    javaClass.writeUInt32BE(0xcafebabe, 0);
    javaClass.writeUInt32BE(0x00000041, 4);
    expect(machOSections(file('java', javaClass))).toBe(null);
    const huge = thin(true, PLAIN);
    huge.writeUInt32LE(0xffffffff, 20);
    expect(machOSections(file('huge', huge))).toBe(null);
    expect(machOSections(path.join(dir, 'absent'))).toBe(null);
  });

  it('is what exec’s preflight says on macOS, before any signature is read', () => {
    const program = file('restricted-program', thin(true, RESTRICTED));
    expect(injectionBlocker(program, 'darwin')?.reason).toBe(restrictSegmentBlocker(program)!.reason);
    expect(injectionBlocker(file('plain-program', thin(true, PLAIN)), 'darwin')).toBe(null);
  });
});

// mach/machine.h: CPU_TYPE_ARM64 with subtypes ALL (0) and ARM64E (2; its capability bits, 0x80000000 for the ptrauth
// ABI version, are not the subtype), CPU_TYPE_X86_64 with subtype ALL (3).
const ARM64: [number, number] = [0x0100000c, 0];
const ARM64E: [number, number] = [0x0100000c, 0x80000002];
const X86_64: [number, number] = [0x01000007, 3];

describe('exec: a program built for arm64e only', () => {
  it('reads each slice’s CPU type and subtype', () => {
    const universal = file('cpus', fat([thin(true, PLAIN, ARM64E), thin(true, PLAIN, X86_64)]));
    expect(machOSlices(universal)?.map((s) => [s.cpuType, s.cpuSubtype])).toEqual([ARM64E, X86_64]);
  });

  it('is refused: the injector has no arm64e slice, so dyld would stop the program at launch', () => {
    const thinFile = file('arm64e-thin', thin(true, PLAIN, ARM64E));
    expect(arm64eOnlyBlocker(thinFile)).toEqual({
      reason: `${thinFile} is built for arm64e only, and the injector has arm64 and x86_64 slices (not arm64e, which needs Apple's pointer authentication): dyld could not load it and would stop the program. Run an arm64 build of the program.`,
      launchFails: true,
    });
    expect(
      arm64eOnlyBlocker(file('arm64e-fat', fat([thin(true, PLAIN, ARM64E), thin(true, PLAIN, [...ARM64E])]))),
    ).not.toBe(null);
    expect(injectionBlocker(thinFile, 'darwin')?.reason).toBe(arm64eOnlyBlocker(thinFile)!.reason);
  });

  it('lets through a program with a slice the injector has: arm64, x86_64, or either beside arm64e', () => {
    expect(arm64eOnlyBlocker(file('arm64-thin', thin(true, PLAIN, ARM64)))).toBe(null);
    expect(arm64eOnlyBlocker(file('x86-thin', thin(true, PLAIN, X86_64)))).toBe(null);
    expect(arm64eOnlyBlocker(file('arm64e-arm64', fat([thin(true, PLAIN, ARM64E), thin(true, PLAIN, ARM64)])))).toBe(
      null,
    );
    expect(arm64eOnlyBlocker(file('arm64e-x86', fat([thin(true, PLAIN, ARM64E), thin(true, PLAIN, X86_64)])))).toBe(
      null,
    );
    expect(arm64eOnlyBlocker(file('not-macho', Buffer.from('#!/bin/sh\n')))).toBe(null);
  });
});
