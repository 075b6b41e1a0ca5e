/**
 * File operations for paths another user may share: every file the tool writes (`--trace`, `--svg`) and the doctor
 * cache. Nothing here writes through a symbolic link, opens a FIFO for writing, or trusts a file or folder someone else
 * could have changed.
 */
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readlinkSync,
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
 * Why a folder that others may write is no place to write a file in, or null: another user could swap a link in for
 * the folder's entries (CWE-59/367). A sticky folder owned by us or root (such as /tmp) lets nobody else rename what we
 * create in it, so it is allowed.
 */
export function sharedFolderProblem(stats: Stats, uid: number | null = effectiveUid()): string | null {
  if (uid === null || (stats.mode & 0o022) === 0) return null;
  const sticky = (stats.mode & 0o1000) !== 0;
  if (sticky && (stats.uid === uid || stats.uid === 0)) return null;
  const mode = (stats.mode & 0o7777).toString(8).padStart(4, '0');
  return `can be written by other users (mode ${mode}) and is not a sticky folder of yours or root's, so another user could swap its entries for links`;
}

/**
 * A file to write, as checked: its folder reached from the root through no link and no folder another user could
 * have changed (every link followed then, never again), with that folder's device and inode, which the write checks.
 */
export interface WriteTarget {
  /** The file: the resolved folder and the file's own name. */
  file: string;
  folder: string;
  dev: number;
  ino: number;
}

/** A write that checkWriteTarget refuses: `message` says which folder or link, and why. */
export class WriteRefusedError extends Error {}

/** How many links a path may cross before it is refused (the kernel's own limit for a path is 40). */
const LINK_LIMIT = 40;

/**
 * `dir` resolved one component at a time from the root, with its stats: each link followed only when it is ours or
 * root's (another user's link could point anywhere), each folder crossed only when it is ours or root's and others
 * may not write it unless it is sticky (else they could rename its entries and plant links). Checking the owner of
 * every folder and link crossed is what a resolved path alone cannot tell: the folder it names, reached another way.
 * Throws WriteRefusedError naming the folder or link.
 */
export function resolveFolderSafely(
  dir: string,
  uid: number | null = effectiveUid(),
): { folder: string; stats: Stats } {
  const absolute = path.resolve(dir);
  const top = path.parse(absolute).root;
  const pending = absolute.slice(top.length).split(path.sep);
  let at = top;
  let stats = lstatSync(top);
  let links = 0;
  const asked = () => `the folder ${absolute}`;
  while (pending.length > 0) {
    const name = pending.shift()!;
    if (name === '' || name === '.') continue;
    if (name === '..') {
      // `at` has no link in it, so its parent is the folder crossed just before.
      at = path.dirname(at);
      stats = lstatSync(at);
      continue;
    }
    const next = path.join(at, name);
    let entry: Stats;
    try {
      entry = lstatSync(next);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') throw new WriteRefusedError(`${asked()} does not exist`);
      throw new WriteRefusedError(`${asked()} cannot be examined (${code ?? (err as Error).message})`);
    }
    if (entry.isSymbolicLink()) {
      if (uid !== null && entry.uid !== uid && entry.uid !== 0)
        throw new WriteRefusedError(
          `${asked()} is reached through ${next}, a link of another user's (uid ${entry.uid}), which could point anywhere`,
        );
      if (++links > LINK_LIMIT)
        throw new WriteRefusedError(`${asked()} is reached through more than ${LINK_LIMIT} links`);
      const target = readlinkSync(next);
      pending.unshift(...target.split(path.sep));
      if (path.isAbsolute(target)) {
        at = path.parse(target).root;
        stats = lstatSync(at);
      }
      continue;
    }
    if (!entry.isDirectory()) throw new WriteRefusedError(`${asked()} does not exist`);
    const problem =
      uid !== null && entry.uid !== uid && entry.uid !== 0
        ? `belongs to another user (uid ${entry.uid})`
        : sharedFolderProblem(entry, uid);
    if (problem !== null)
      throw new WriteRefusedError(
        next === absolute
          ? `the folder ${next} ${problem}`
          : `the folder ${next}, on the way to ${absolute}, ${problem}`,
      );
    at = next;
    stats = entry;
  }
  return { folder: at, stats };
}

/**
 * Checks where `file` would be written before anything runs (resolveFolderSafely, then replaceableBecause): its folder
 * resolved once, with its device and inode, and the file new or a regular file of ours that we may write. Throws
 * WriteRefusedError saying why not.
 */
export function checkWriteTarget(file: string): WriteTarget {
  const absolute = path.resolve(file);
  const { folder, stats } = resolveFolderSafely(path.dirname(absolute));
  const resolved = path.join(folder, path.basename(absolute));
  const problem = replaceableBecause(resolved);
  if (problem !== null) throw new WriteRefusedError(`${resolved} ${problem}`);
  return { file: resolved, folder, dev: stats.dev, ino: stats.ino };
}

/**
 * Why the target's folder is no longer the one checked (a link or another folder swapped in for it, or for a folder
 * above it, or a folder on the way now someone else's), or null: asked again before every write.
 */
export function folderChangedBecause(target: WriteTarget): string | null {
  try {
    lstatSync(target.folder);
  } catch (err) {
    return `cannot be examined (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`;
  }
  let now: { folder: string; stats: Stats };
  try {
    now = resolveFolderSafely(target.folder);
  } catch (err) {
    return err instanceof WriteRefusedError
      ? `is no longer safe: ${err.message}`
      : `cannot be examined (${(err as Error).message})`;
  }
  if (now.folder !== target.folder) return 'now resolves elsewhere (a link was swapped in)';
  if (now.stats.dev !== target.dev || now.stats.ino !== target.ino) return 'is not the folder checked before';
  return null;
}

/**
 * Writes `text` to a checked target: the folder seen to be the one checked, the file checked again (replaceableBecause),
 * then written as a new file under a name nobody can guess, created O_EXCL|O_NOFOLLOW in the same folder, and renamed
 * over the file's name. Rename replaces the name, so nothing is ever written into a linked file or through a link
 * swapped in meanwhile, a reader never sees half a file, and rerunning a command over its own output replaces it.
 * Throws WriteRefusedError, or the error of the write.
 */
export function writeTarget(target: WriteTarget, text: string): void {
  const changed = folderChangedBecause(target);
  if (changed !== null)
    throw new WriteRefusedError(`its folder ${target.folder} ${changed}, so nothing is written there`);
  const problem = replaceableBecause(target.file);
  if (problem !== null) throw new WriteRefusedError(`${target.file} ${problem}`);
  // A name nobody can guess: another user who planted a file there first would stop the write (O_EXCL refuses it).
  const temp = path.join(target.folder, `.${path.basename(target.file)}.${randomBytes(12).toString('hex')}.tmp`);
  try {
    writeNewFile(temp, text);
    renameSync(temp, target.file);
  } catch (err) {
    rmSync(temp, { force: true });
    throw err;
  }
}

/**
 * Writes `text` to `file` (the one writer of every file the tool writes: --trace, --svg, reports): checkWriteTarget,
 * then writeTarget. Throws WriteRefusedError saying why not, or the error of the write.
 */
export function writeFileSafely(file: string, text: string): void {
  writeTarget(checkWriteTarget(file), text);
}
