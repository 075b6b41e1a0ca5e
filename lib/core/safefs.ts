/**
 * File operations for paths another user may share: the `--trace` file and the doctor cache. Nothing here writes
 * through a symbolic link, opens a FIFO for writing, or trusts a file or folder someone else could have changed.
 */
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  type Stats,
} from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';

/** This process's effective user id, or null where there is none (Windows, which has no owner bits to check). */
export function effectiveUid(): number | null {
  return typeof process.geteuid === 'function' ? process.geteuid() : null;
}

/**
 * Why a file or folder is not to be trusted, as a phrase to follow its name: it belongs to another user, or its group
 * or other users may write it. Null when it is ours and only we can change it (always, where there are no owners).
 */
export function untrustedBecause(stats: Stats, uid: number | null = effectiveUid()): string | null {
  if (uid === null) return null;
  if (stats.uid !== uid) return `belongs to another user (uid ${stats.uid}, not ${uid})`;
  const mode = stats.mode & 0o777;
  if ((mode & 0o022) !== 0)
    return `can be written by ${(mode & 0o002) !== 0 ? 'other users' : 'its group'} (mode ${mode.toString(8).padStart(4, '0')})`;
  return null;
}

/**
 * Why a folder is no place to take code or a path from, as a phrase to follow its name, or null: it belongs to a user
 * other than us and root, or its group or other users may write it (and so could plant a package or a link in it).
 * Root's folders are ours to trust: root could change anything anyway.
 */
export function foreignFolderBecause(stats: Stats, uid: number | null = effectiveUid()): string | null {
  if (uid === null) return null;
  if (stats.uid !== uid && stats.uid !== 0) return `belongs to another user (uid ${stats.uid})`;
  if ((stats.mode & 0o022) !== 0)
    return `can be written by ${(stats.mode & 0o002) !== 0 ? 'other users' : 'its group'} (mode ${(stats.mode & 0o7777).toString(8).padStart(4, '0')})`;
  return null;
}

/**
 * Creates `dir` and every missing folder above it, one at a time, each with `mode`. Bounded by the path's depth: Node's
 * recursive mkdirSync loops for ever on a parent that reports ENOENT to mkdir although it exists (`/proc/nope`).
 * Throws the first mkdir error other than EEXIST.
 */
export function makeFolders(dir: string, mode = 0o700): void {
  const missing: string[] = [];
  for (let at = path.resolve(dir); ; at = path.dirname(at)) {
    try {
      statSync(at);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    missing.push(at);
    if (path.dirname(at) === at) break;
  }
  for (const folder of missing.reverse()) {
    try {
      mkdirSync(folder, { mode });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
}

/** What a read of a file we own said: its text, or why it was not read. */
export type OwnFileRead = { ok: true; text: string } | { ok: false; missing: boolean; why: string };

/**
 * Reads a regular file that belongs to us and that only we can write, without following a symbolic link or waiting on
 * a FIFO, and at most `maxBytes`. The checks are made on the open descriptor, so the file cannot be swapped between
 * the check and the read. Never throws: a read that fails (EIO) is a reason like the others.
 */
export function readOwnFile(file: string, maxBytes: number): OwnFileRead {
  let fd: number;
  try {
    // O_NOFOLLOW: a symbolic link in the last component fails (ELOOP) instead of being followed. O_NONBLOCK: a FIFO
    // opens at once (and is then refused as not a regular file) instead of waiting for a writer.
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // ENOTDIR: a part of the path is a file, so there is no such file either.
    if (code === 'ENOENT' || code === 'ENOTDIR') return { ok: false, missing: true, why: 'does not exist' };
    return {
      ok: false,
      missing: false,
      why: code === 'ELOOP' ? 'is a symbolic link' : `cannot be opened (${code ?? (err as Error).message})`,
    };
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) return { ok: false, missing: false, why: 'is not a regular file' };
    const untrusted = untrustedBecause(stats);
    if (untrusted !== null) return { ok: false, missing: false, why: untrusted };
    if (stats.size > maxBytes) return { ok: false, missing: false, why: `is larger than ${maxBytes} bytes` };
    // Nobody else can write it (checked above), so it stays at the size that was checked.
    try {
      return { ok: true, text: readFileSync(fd, 'utf8') };
    } catch (err) {
      return {
        ok: false,
        missing: false,
        why: `cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
      };
    }
  } finally {
    closeSync(fd);
  }
}

/** Creates `file`, which must not exist yet (not even as a link), and writes `text` to it. */
export function writeNewFile(file: string, text: string, mode = 0o666): void {
  // O_EXCL alone already refuses a link in the last component; O_NOFOLLOW says so where it is read.
  const fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
  try {
    writeFileSync(fd, text);
  } finally {
    closeSync(fd);
  }
}

/**
 * Why `file` may not be written by writeFileSafely, or null when it may: it is missing (it will be created), or a
 * regular file of ours that we may write (it will be replaced). A symbolic link, a FIFO, a folder, another user's file
 * or a read-only one is never written.
 */
export function replaceableBecause(file: string, uid: number | null = effectiveUid()): string | null {
  let stats: Stats;
  try {
    stats = lstatSync(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? null : `cannot be examined (${code ?? (err as Error).message})`;
  }
  if (stats.isSymbolicLink()) return 'is a symbolic link, which is never written through';
  if (stats.isDirectory()) return 'is a folder';
  if (!stats.isFile()) return 'exists and is not a regular file';
  if (uid !== null && stats.uid !== uid) return `belongs to another user (uid ${stats.uid}), so it is not replaced`;
  // root may write any file, and so replaces a read-only file of its own as `cp` would.
  if (uid !== null && uid !== 0 && (stats.mode & 0o200) === 0) return 'is read-only';
  return null;
}

/**
 * Writes `text` to `file` without writing through a path someone else could have planted. A missing file is created
 * with O_EXCL|O_NOFOLLOW. An existing one (also one created meanwhile) is replaced only when replaceableBecause()
 * allows it, by a new file created the same way in the same folder and renamed over it: rename replaces the name, so
 * it never writes into a linked file or through a link swapped in meanwhile. Throws an Error saying why otherwise.
 */
export function writeFileSafely(file: string, text: string): void {
  const refuse = () => {
    const problem = replaceableBecause(file);
    if (problem !== null) throw new Error(`${file} ${problem}`);
  };
  refuse();
  try {
    writeNewFile(file, text);
    return;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  // It exists (it did, or someone created it after the check): look again before replacing it.
  refuse();
  // A name nobody can guess: another user who planted a file there first would stop the write (O_EXCL refuses it).
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(12).toString('hex')}.tmp`);
  try {
    writeNewFile(temp, text);
    renameSync(temp, file);
  } catch (err) {
    rmSync(temp, { force: true });
    throw err;
  }
}
