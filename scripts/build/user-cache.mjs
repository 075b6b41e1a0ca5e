// The per-user build cache outside the clone: ${XDG_CACHE_HOME:-~/.cache}/metal-cap-shim/<name>/. What lives there is
// keyed by everything that shapes it (each user says what), so a fresh clone with a warm cache reuses it at once and
// a change rebuilds under a new key; a key never in use again is left for whoever clears the cache. Used by the real
// llama.cpp tools (llama-tools.mjs: `llama-tools`) and the conformance suite's build (test/conformance/build.mjs:
// `conformance` for its compiled objects, `tarballs` for node-llama-cpp's npm tarballs, checked by integrity).
import { lstatSync, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';

/** ${XDG_CACHE_HOME:-~/.cache}/metal-cap-shim/<name> (an XDG_CACHE_HOME that is not absolute is ignored, as the XDG
 * specification says). Nothing is created. */
export function userCachePath(name, env = process.env) {
  const xdg = env.XDG_CACHE_HOME;
  const base = xdg && path.isAbsolute(xdg) ? xdg : path.join(homedir(), '.cache');
  return path.join(base, 'metal-cap-shim', name);
}

/** Fails unless `dir` is a real folder (not a link) of this user that nobody else can write. */
export function assertPrivate(dir) {
  const st = lstatSync(dir);
  if (!st.isDirectory()) throw new Error(`${dir} is not a folder (a link?): remove it`);
  if (typeof process.getuid === 'function' && st.uid !== process.getuid())
    throw new Error(`${dir} belongs to uid ${st.uid}, not to this user: remove it`);
  if ((st.mode & 0o022) !== 0) throw new Error(`${dir} is writable by others (mode ${(st.mode & 0o777).toString(8)})`);
}

/** Creates `root` (a userCachePath) and its parent metal-cap-shim/ private, checks both, and returns `root`. */
export function privateCacheRoot(root) {
  const mine = path.dirname(root);
  mkdirSync(path.dirname(mine), { recursive: true, mode: 0o700 });
  for (const dir of [mine, root]) {
    try {
      mkdirSync(dir, { mode: 0o700 });
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
    }
    assertPrivate(dir);
  }
  return root;
}
