// The file operations for shared folders (lib/core/safefs.ts), in-process: what `--trace` and the doctor cache rely on so
// that nothing is written through a planted path and nothing another user could change is trusted.
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  statSync,
  symlinkSync,
  writeFileSync,
  type Stats,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  effectiveUid,
  makeFolders,
  readOwnFile,
  replaceableBecause,
  untrustedBecause,
  writeFileSafely,
  writeNewFile,
} from '../../lib/core/safefs.js';

const NOBODY = 65534;
const asRoot = process.getuid?.() === 0;
const me = process.geteuid!();
let dir: string;
beforeEach(() => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'mcs-safefs-')));
});

const stats = (uid: number, mode: number) => ({ uid, mode: 0o100000 | mode }) as Stats;
function errorOf(fn: () => unknown): NodeJS.ErrnoException {
  try {
    fn();
  } catch (e) {
    return e as NodeJS.ErrnoException;
  }
  throw new Error('expected an error');
}

describe('untrustedBecause: ours, and nobody else may write it', () => {
  it('this process’s effective uid', () => {
    expect(effectiveUid()).toBe(me);
  });

  it.each([
    [stats(1000, 0o644), null],
    [stats(1000, 0o700), null],
    [stats(1000, 0o755), null],
    [stats(1001, 0o600), 'belongs to another user (uid 1001, not 1000)'],
    [stats(1000, 0o664), 'can be written by its group (mode 0664)'],
    [stats(1000, 0o646), 'can be written by other users (mode 0646)'],
    [stats(1000, 0o1777), 'can be written by other users (mode 0777)'],
  ])('%o', (s, why) => {
    expect(untrustedBecause(s, 1000)).toBe(why);
  });

  it('where there are no owners (no geteuid): everything', () => {
    expect(untrustedBecause(stats(1001, 0o777), null)).toBeNull();
  });
});

describe('makeFolders: a level at a time', () => {
  it('creates every missing folder with the mode, and nothing else', () => {
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      makeFolders(path.join(dir, 'a', 'b', 'c'));
      makeFolders(path.join(dir, 'a', 'b'));
    } finally {
      process.chdir(cwd);
    }
    expect(readdirSync(dir)).toEqual(['a']);
    expect(['a', 'a/b', 'a/b/c'].map((p) => statSync(path.join(dir, p)).mode & 0o777)).toEqual([0o700, 0o700, 0o700]);
    makeFolders(path.join(dir, 'x'), 0o750);
    expect(statSync(path.join(dir, 'x')).mode & 0o777).toBe(0o750 & ~process.umask());
  });

  it('a path under a file: the stat error (ENOTDIR), not a later mkdir one', () => {
    writeFileSync(path.join(dir, 'file'), '');
    expect(errorOf(() => makeFolders(path.join(dir, 'file', 'sub'))).syscall).toBe('stat');
  });

  it('a name that stat cannot see but mkdir finds taken (a dangling link): left to the caller’s checks', () => {
    symlinkSync(path.join(dir, 'nowhere'), path.join(dir, 'dangling'));
    makeFolders(path.join(dir, 'dangling'));
    expect(lstatSync(path.join(dir, 'dangling')).isSymbolicLink()).toBe(true);
  });

  it.skipIf(process.platform !== 'linux')(
    'under /proc, where a recursive mkdirSync spins: the mkdir error, at once',
    () => {
      expect([
        errorOf(() => makeFolders('/proc/nope/a/b')).code,
        errorOf(() => makeFolders('/proc/nope/a/b')).path,
      ]).toEqual(['ENOENT', '/proc/nope']);
    },
  );
});

describe('readOwnFile', () => {
  const file = () => path.join(dir, 'f');

  it('a file of ours: its text, up to maxBytes and no further', () => {
    writeFileSync(file(), 'x'.repeat(100));
    chmodSync(file(), 0o600);
    expect(readOwnFile(file(), 100)).toEqual({ ok: true, text: 'x'.repeat(100) });
    expect(readOwnFile(file(), 99)).toEqual({ ok: false, missing: false, why: 'is larger than 99 bytes' });
    writeFileSync(file(), '');
    expect(readOwnFile(file(), 0)).toEqual({ ok: true, text: '' });
  });

  it('missing, or under a file: a plain miss', () => {
    expect(readOwnFile(file(), 10)).toEqual({ ok: false, missing: true, why: 'does not exist' });
    writeFileSync(file(), '');
    expect(readOwnFile(path.join(file(), 'x'), 10)).toEqual({ ok: false, missing: true, why: 'does not exist' });
  });

  // /proc/self/mem is a regular file of ours, mode 0600 and size 0, whose read at offset 0 fails: an I/O error staged.
  it.skipIf(process.platform !== 'linux')('a read that fails (EIO): a reason, never a throw', () => {
    expect(readOwnFile('/proc/self/mem', 10)).toEqual({ ok: false, missing: false, why: 'cannot be read (EIO)' });
  });

  it('a symbolic link (even to a file of ours) is not followed', () => {
    writeFileSync(file(), 'target');
    symlinkSync(file(), path.join(dir, 'link'));
    expect(readOwnFile(path.join(dir, 'link'), 10)).toEqual({ ok: false, missing: false, why: 'is a symbolic link' });
  });

  it('a FIFO: refused at once, with no writer (no hang)', () => {
    execFileSync('mkfifo', [file()]);
    expect(readOwnFile(file(), 10)).toEqual({ ok: false, missing: false, why: 'is not a regular file' });
    mkdirSync(path.join(dir, 'folder'));
    expect(readOwnFile(path.join(dir, 'folder'), 10)).toEqual({
      ok: false,
      missing: false,
      why: 'is not a regular file',
    });
  });

  it('one others may write, or another user’s: refused', () => {
    writeFileSync(file(), 'x');
    chmodSync(file(), 0o666);
    expect(readOwnFile(file(), 10)).toEqual({
      ok: false,
      missing: false,
      why: 'can be written by other users (mode 0666)',
    });
    if (asRoot) {
      chmodSync(file(), 0o644);
      chownSync(file(), NOBODY, NOBODY);
      expect(readOwnFile(file(), 10)).toEqual({
        ok: false,
        missing: false,
        why: `belongs to another user (uid ${NOBODY}, not 0)`,
      });
    }
  });

  it('a name that cannot be opened for another reason: that reason', () => {
    expect(readOwnFile(path.join(dir, 'n'.repeat(300)), 10)).toEqual({
      ok: false,
      missing: false,
      why: 'cannot be opened (ENAMETOOLONG)',
    });
  });
});

describe.skipIf(process.platform !== 'linux')('descriptors: every one opened is closed again', () => {
  it('after reads of every outcome and after writes', () => {
    const open = () => readdirSync('/proc/self/fd').length;
    const f = path.join(dir, 'f');
    writeFileSync(f, 'x');
    chmodSync(f, 0o600);
    const before = open();
    for (let i = 0; i < 5; i++) {
      readOwnFile(f, 10);
      readOwnFile(f, 0);
      writeNewFile(path.join(dir, `n${i}`), 'x');
    }
    chmodSync(f, 0o666);
    readOwnFile(f, 10);
    expect(open()).toBe(before);
  });
});

describe('writeNewFile: O_EXCL|O_NOFOLLOW', () => {
  it('creates the file with the mode and the whole text', () => {
    const f = path.join(dir, 'new');
    const text = 'é'.repeat(100_000);
    writeNewFile(f, text, 0o600);
    expect([readFileSync(f, 'utf8'), statSync(f).mode & 0o777]).toEqual([text, 0o600]);
  });

  it('never over an existing name: a file, a link (to a missing file too), a FIFO', () => {
    const f = path.join(dir, 'old');
    writeFileSync(f, 'old');
    symlinkSync(path.join(dir, 'missing'), path.join(dir, 'link'));
    execFileSync('mkfifo', [path.join(dir, 'fifo')]);
    for (const name of ['old', 'link', 'fifo'])
      expect(errorOf(() => writeNewFile(path.join(dir, name), 'new')).code).toBe('EEXIST');
    expect(readFileSync(f, 'utf8')).toBe('old');
    expect(readdirSync(dir).sort()).toEqual(['fifo', 'link', 'old']);
  });
});

describe('replaceableBecause and writeFileSafely', () => {
  it.each([
    ['missing', () => path.join(dir, 'f'), null],
    ['a regular file of ours', () => (writeFileSync(path.join(dir, 'f'), ''), path.join(dir, 'f')), null],
    [
      'a link',
      () => (symlinkSync('/etc/passwd', path.join(dir, 'f')), path.join(dir, 'f')),
      'is a symbolic link, which is never written through',
    ],
    ['a folder', () => (mkdirSync(path.join(dir, 'f')), path.join(dir, 'f')), 'is a folder'],
    [
      'a FIFO',
      () => (execFileSync('mkfifo', [path.join(dir, 'f')]), path.join(dir, 'f')),
      'exists and is not a regular file',
    ],
    [
      'under a file',
      () => (writeFileSync(path.join(dir, 'f'), ''), path.join(dir, 'f', 'g')),
      'cannot be examined (ENOTDIR)',
    ],
  ])('%s', (_, make, why) => {
    expect(replaceableBecause(make())).toBe(why);
  });

  it('another user’s file, and a read-only file unless we are root', () => {
    const f = path.join(dir, 'f');
    writeFileSync(f, '');
    chmodSync(f, 0o444);
    // Where there are no owners, nothing is read-only to us either.
    expect(replaceableBecause(f, null)).toBeNull();
    const owner = statSync(f).uid;
    expect(replaceableBecause(f, owner + 1)).toBe(`belongs to another user (uid ${owner}), so it is not replaced`);
    expect(replaceableBecause(f, 0)).toBe(
      owner === 0 ? null : `belongs to another user (uid ${owner}), so it is not replaced`,
    );
    if (asRoot) {
      chownSync(f, NOBODY, NOBODY);
      expect(replaceableBecause(f, NOBODY)).toBe('is read-only');
      chmodSync(f, 0o644);
      expect(replaceableBecause(f, NOBODY)).toBeNull();
    }
    expect(replaceableBecause(f, null)).toBeNull();
  });

  it('a new file is created; an existing one of ours replaced by a new file, and no temporary file is left', () => {
    const f = path.join(dir, 'f');
    writeFileSafely(f, 'one');
    const first = statSync(f).ino;
    const hardLink = path.join(dir, 'h');
    execFileSync('ln', [f, hardLink]);
    writeFileSafely(f, 'two');
    expect([readFileSync(f, 'utf8'), readFileSync(hardLink, 'utf8')]).toEqual(['two', 'one']);
    expect(statSync(f).ino).not.toBe(first);
    expect(readdirSync(dir).sort()).toEqual(['f', 'h']);
  });

  it('refuses what replaceableBecause refuses, naming the file; writes nothing', () => {
    const f = path.join(dir, 'f');
    symlinkSync(path.join(dir, 'victim'), f);
    expect(errorOf(() => writeFileSafely(f, 'x')).message).toBe(
      `${f} is a symbolic link, which is never written through`,
    );
    expect(readdirSync(dir)).toEqual(['f']);
  });

  it('a file that appears between the check and the create is checked again (a FIFO planted then is refused, no hang)', () => {
    const f = path.join(dir, 'f');
    // A shell that plants the FIFO while the write is on its way is not reproducible; a FIFO already there takes the
    // same second check after the exclusive create fails.
    execFileSync('mkfifo', [f]);
    expect(errorOf(() => writeFileSafely(f, 'x')).message).toBe(`${f} exists and is not a regular file`);
  });

  it('an error that is not "exists" (the folder is gone) is thrown as it is', () => {
    const f = path.join(dir, 'gone', 'f');
    expect(errorOf(() => writeFileSafely(f, 'x')).code).toBe('ENOENT');
  });
});
