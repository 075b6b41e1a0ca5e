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
  checkWriteTarget,
  effectiveUid,
  foreignFolderBecause,
  makeFolders,
  readOwnFile,
  replaceableBecause,
  untrustedBecause,
  writeFileSafely,
  WriteRefusedError,
  writeNewFile,
  writeTarget,
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

  it('a folder that does not exist is refused, naming it', () => {
    const f = path.join(dir, 'gone', 'f');
    expect(errorOf(() => writeFileSafely(f, 'x'))).toEqual(
      new WriteRefusedError(`the folder ${path.join(dir, 'gone')} does not exist`),
    );
  });
});

describe('foreignFolderBecause: where code or a path may be taken from', () => {
  it.each([
    ['ours, 0755', 1000, 0o755, null],
    ['root’s, 0755', 0, 0o755, null],
    ['ours, group-writable', 1000, 0o775, 'can be written by its group (mode 0775)'],
    ['root’s, sticky and world-writable (as /tmp)', 0, 0o1777, 'can be written by other users (mode 1777)'],
    ['another user’s, 0755', 1001, 0o755, 'belongs to another user (uid 1001)'],
    ['another user’s, 0700', 1001, 0o700, 'belongs to another user (uid 1001)'],
  ])('%s', (_name, uid, mode, why) => {
    expect(foreignFolderBecause(stats(uid, mode), 1000)).toBe(why);
  });

  it('everything where there are no owners', () => {
    expect(foreignFolderBecause(stats(12345, 0o777), null)).toBeNull();
  });
});

describe('resolveFolderSafely and checkWriteTarget: every folder and link crossed', () => {
  it('a path of our own folders and links of ours: the real folder, with its device and inode', () => {
    const real = path.join(dir, 'real');
    mkdirSync(real);
    symlinkSync(real, path.join(dir, 'abs'));
    symlinkSync('real/../real', path.join(dir, 'rel'));
    const { dev, ino } = statSync(real);
    for (const via of ['real', 'abs', 'rel'])
      expect(checkWriteTarget(path.join(dir, via, 'out.svg'))).toEqual({
        file: path.join(real, 'out.svg'),
        folder: real,
        dev,
        ino,
      });
  });

  it('a folder others may write is refused unless it is sticky and ours or root’s, on the way or at the end', () => {
    const open = path.join(dir, 'open');
    mkdirSync(path.join(open, 'inner'), { recursive: true });
    chmodSync(open, 0o777);
    const why = `can be written by other users (mode 0777) and is not a sticky folder of yours or root's, so another user could swap its entries for links`;
    expect(errorOf(() => checkWriteTarget(path.join(open, 'out.svg')))).toEqual(
      new WriteRefusedError(`the folder ${open} ${why}`),
    );
    expect(errorOf(() => checkWriteTarget(path.join(open, 'inner', 'out.svg')))).toEqual(
      new WriteRefusedError(`the folder ${open}, on the way to ${path.join(open, 'inner')}, ${why}`),
    );
    chmodSync(open, 0o1777);
    expect(checkWriteTarget(path.join(open, 'inner', 'out.svg')).folder).toBe(path.join(open, 'inner'));
  });

  it('a link loop is refused after 40 links, not followed for ever', () => {
    symlinkSync(path.join(dir, 'b'), path.join(dir, 'a'));
    symlinkSync(path.join(dir, 'a'), path.join(dir, 'b'));
    expect(errorOf(() => checkWriteTarget(path.join(dir, 'a', 'out.svg')))).toEqual(
      new WriteRefusedError(`the folder ${path.join(dir, 'a')} is reached through more than 40 links`),
    );
  });

  it('a file where a folder should be: the folder does not exist', () => {
    writeFileSync(path.join(dir, 'plain'), '');
    expect(errorOf(() => checkWriteTarget(path.join(dir, 'plain', 'out.svg')))).toEqual(
      new WriteRefusedError(`the folder ${path.join(dir, 'plain')} does not exist`),
    );
  });

  it.runIf(asRoot)(
    'a link another user planted in a shared parent is never followed: the victim’s file is intact',
    () => {
      const shared = path.join(dir, 'shared');
      const victim = path.join(dir, 'victim');
      mkdirSync(shared, { mode: 0o1777 });
      chmodSync(shared, 0o1777);
      mkdirSync(victim);
      writeFileSync(path.join(victim, 'out.svg'), 'victim');
      symlinkSync(victim, path.join(shared, 'reports'));
      execFileSync('chown', ['-h', `${NOBODY}:${NOBODY}`, path.join(shared, 'reports')]);
      expect(errorOf(() => writeFileSafely(path.join(shared, 'reports', 'out.svg'), 'written'))).toEqual(
        new WriteRefusedError(
          `the folder ${path.join(shared, 'reports')} is reached through ${path.join(shared, 'reports')}, a link of another user's (uid ${NOBODY}), which could point anywhere`,
        ),
      );
      expect(readFileSync(path.join(victim, 'out.svg'), 'utf8')).toBe('victim');
    },
  );

  it.runIf(asRoot)('a folder of another user’s, at the end or on the way, is never written in', () => {
    const theirs = path.join(dir, 'theirs');
    mkdirSync(path.join(theirs, 'sub'), { recursive: true });
    chownSync(theirs, NOBODY, NOBODY);
    expect(errorOf(() => writeFileSafely(path.join(theirs, 'out.svg'), 'x'))).toEqual(
      new WriteRefusedError(`the folder ${theirs} belongs to another user (uid ${NOBODY})`),
    );
    expect(errorOf(() => writeFileSafely(path.join(theirs, 'sub', 'out.svg'), 'x'))).toEqual(
      new WriteRefusedError(
        `the folder ${theirs}, on the way to ${path.join(theirs, 'sub')}, belongs to another user (uid ${NOBODY})`,
      ),
    );
    expect(readdirSync(theirs)).toEqual(['sub']);
  });

  it('the written file is new each time (a temporary file renamed into place), so rerunning over it works', () => {
    const f = path.join(dir, 'out.svg');
    const target = checkWriteTarget(f);
    writeTarget(target, 'one');
    const first = statSync(f).ino;
    writeTarget(checkWriteTarget(f), 'two');
    expect([readFileSync(f, 'utf8'), statSync(f).ino === first, readdirSync(dir)]).toEqual(['two', false, ['out.svg']]);
  });
});
