#!/usr/bin/env node
// A project that embeds node-llama-cpp with its Linux CPU prebuilt, for testing `metal-cap-shim bench
// --node-llama-cpp` on Linux (test/bench/node-llama-cpp.test.ts): the node-llama-cpp release of the newest conformance
// era (its tarball, fetched and checked by test/conformance/build.mjs) and its prebuilt binary package
// @node-llama-cpp/linux-x64 of the same version (PREBUILT, pinned by integrity, fetched with `npm pack` the same way),
// installed with npm into ${XDG_CACHE_HOME:-~/.cache}/metal-cap-shim/node-llama-cpp/<key>/ (node-llama-cpp's own
// dependencies come from the registry; no install scripts run, so nothing is downloaded or built by node-llama-cpp).
// Beside it, vocab.gguf: the release's vocab-only models/ggml-vocab-llama-spm.gguf, for scripts/build/tiny-gguf.mjs.
//
// <key> hashes both integrities and the install's recipe (INSTALL), never this script's text: how the install reports
// itself does not install again. The project is built in a private mkdtemp folder renamed into place; project.json is
// written last; each step (fetch, install, vocab) is said on stderr as it starts, with what it downloads, and the
// temporary folders are removed on failure and on SIGINT, SIGTERM or SIGHUP (cleanup-on-signal.mjs).
// `node scripts/build/node-llama-cpp-prebuilt.mjs` prints nodeLlamaCppProject()'s JSON.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { archiveTree, cloneBundle, fetchTarball } from '../../test/conformance/build.mjs';
import { ERAS } from '../../test/conformance/eras.mjs';
import { cleanupOnSignal } from './cleanup-on-signal.mjs';
import { formatDuration } from './progress.mjs';

const run = promisify(execFile);
const self = fileURLToPath(import.meta.url);

/** node-llama-cpp as the newest era has it. */
export const NODE_LLAMA_CPP = ERAS[ERAS.length - 1];
const VERSION = NODE_LLAMA_CPP.package.slice(NODE_LLAMA_CPP.package.lastIndexOf('@') + 1);

/** Its Linux CPU prebuilt, the same version. */
export const PREBUILT = Object.freeze({
  package: `@node-llama-cpp/linux-x64@${VERSION}`,
  integrity: 'sha512-5uCCDNqWCNfaAm8aR/Uzxbo4HBpKgNF91kCHPepKhgMgV2OAmatoefbOlMihsqCiH2Od35E/eUHQCFbfRBJuOg==',
});

/** What shapes the installed project besides the two tarballs: npm's arguments and the vocab file taken. */
const INSTALL = Object.freeze({
  // --omit=optional: node-llama-cpp's other prebuilts (CUDA, Vulkan, other systems) stay out; the one given is in.
  npm: Object.freeze(['install', '--ignore-scripts', '--no-audit', '--no-fund', '--omit=optional', '--silent']),
  vocab: 'models/ggml-vocab-llama-spm.gguf',
});
const VOCAB = INSTALL.vocab;

/**
 * What a first install costs, measured on the shared 2-core Linux machine (2026-12-06): the seconds, the two
 * tarballs fetched into the user cache (unless there), and the project kept in the cache.
 */
export const PREBUILT_COST = Object.freeze({ seconds: '20–50', tarballsMB: 47, keptMB: 86 });

/** The project cannot be had here: not Linux x64, no npm or git, or a tarball npm cannot fetch (the message says). */
export class PrebuiltUnavailable extends Error {
  constructor(message) {
    super(message);
    this.name = 'PrebuiltUnavailable';
  }
}

/**
 * A folder for this user alone: made 0700 when missing; a link, another user's folder or one others can write is
 * refused (the project's code is loaded from here).
 */
function ownFolder(dir) {
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (err) {
    if (err.code !== 'EEXIST') throw err;
  }
  const st = lstatSync(dir);
  const mine = typeof process.getuid !== 'function' || st.uid === process.getuid();
  if (!st.isDirectory() || !mine || (st.mode & 0o022) !== 0)
    throw new Error(`${dir} must be a folder of this user that nobody else can write (not a link): remove it`);
  return dir;
}

/** ${XDG_CACHE_HOME:-~/.cache}/metal-cap-shim/node-llama-cpp (a relative XDG_CACHE_HOME is ignored, as XDG says). */
export function prebuiltCacheRoot(env = process.env) {
  const xdg = env.XDG_CACHE_HOME;
  const base = xdg && path.isAbsolute(xdg) ? xdg : path.join(homedir(), '.cache');
  return path.join(base, 'metal-cap-shim', 'node-llama-cpp');
}

function cacheKey() {
  return createHash('sha256')
    .update(JSON.stringify({ integrity: NODE_LLAMA_CPP.integrity, prebuilt: PREBUILT.integrity, install: INSTALL }))
    .digest('hex')
    .slice(0, 16);
}

function log(line) {
  process.stderr.write(`node-llama-cpp-prebuilt: ${line}\n`);
}

/** The cached project, or null when the folder is not a complete one. */
function readCached(dir) {
  try {
    const meta = JSON.parse(readFileSync(path.join(dir, 'project.json'), 'utf8'));
    return { dir, vocab: path.join(dir, 'vocab.gguf'), version: meta.version, release: meta.release };
  } catch (err) {
    if (err.code === 'ENOENT') return null;
    throw err;
  }
}

async function build(dir, root) {
  const started = Date.now();
  const step = (n, what) => log(`[${n}/3] ${what} (${formatDuration(Date.now() - started)})`);
  step(
    1,
    `fetch: ${NODE_LLAMA_CPP.package} and ${PREBUILT.package} (${PREBUILT_COST.tarballsMB} MB from npm, unless cached)`,
  );
  let tarballs;
  try {
    tarballs = [
      await fetchTarball(NODE_LLAMA_CPP.package, NODE_LLAMA_CPP.integrity),
      await fetchTarball(PREBUILT.package, PREBUILT.integrity),
    ];
  } catch (err) {
    throw new PrebuiltUnavailable(`cannot fetch node-llama-cpp ${VERSION} or its prebuilt: ${err.message}`);
  }
  const guard = cleanupOnSignal({ log });
  try {
    const staging = guard.folder(mkdtempSync(path.join(root, '.staging-')));
    const work = guard.folder(mkdtempSync(path.join(tmpdir(), 'mcs-nlc-prebuilt-')));
    writeFileSync(
      path.join(staging, 'package.json'),
      `${JSON.stringify({ name: 'bench-node-llama-cpp-project', private: true, type: 'module' }, null, 2)}\n`,
    );
    step(
      2,
      `install: npm install into ${dir} (node-llama-cpp's dependencies from npm; ${PREBUILT_COST.keptMB} MB kept)`,
    );
    const install = run('npm', [...INSTALL.npm, ...tarballs], { cwd: staging, maxBuffer: 16 << 20 });
    guard.child(install.child);
    await install;
    step(3, `vocab: ${VOCAB} from the release's git bundle`);
    const { repo, tag } = await cloneBundle(tarballs[0], work);
    await archiveTree(repo, path.join(work, 'src'), [VOCAB]);
    copyFileSync(path.join(work, 'src', VOCAB), path.join(staging, 'vocab.gguf'));
    const meta = { version: VERSION, release: tag, prebuilt: PREBUILT.package, vocab: VOCAB };
    writeFileSync(path.join(staging, 'project.json'), `${JSON.stringify(meta, null, 2)}\n`);
    try {
      renameSync(staging, dir);
    } catch (err) {
      // Another install of the same key finished first: keep it (the guard removes this one).
      if (err.code !== 'EEXIST' && err.code !== 'ENOTEMPTY') throw err;
    }
    log(`installed in ${formatDuration(Date.now() - started)}: ${dir}`);
  } catch (err) {
    // Stopped by a signal: its handler removes the folders and exits with the signal's code; nothing more is said.
    if (guard.stopping() !== null) await new Promise(() => {});
    throw err;
  } finally {
    guard.release();
  }
  return readCached(dir);
}

/**
 * The project (`{ dir, vocab, version, release }`): node-llama-cpp and its Linux x64 CPU prebuilt installed in `dir`,
 * made once into the cache. Throws PrebuiltUnavailable off Linux x64 or when npm cannot fetch the tarballs.
 */
export async function nodeLlamaCppProject({ env = process.env } = {}) {
  if (process.platform !== 'linux' || process.arch !== 'x64')
    throw new PrebuiltUnavailable(`the prebuilt is for Linux x64, this is ${process.platform} ${process.arch}`);
  try {
    await run('git', ['--version']);
  } catch {
    throw new PrebuiltUnavailable('git not found: install git');
  }
  const root = prebuiltCacheRoot(env);
  mkdirSync(path.dirname(path.dirname(root)), { recursive: true, mode: 0o700 });
  ownFolder(path.dirname(root));
  ownFolder(root);
  const dir = path.join(root, cacheKey());
  const cached = readCached(dir);
  if (cached !== null) return cached;
  log(
    `installing node-llama-cpp ${VERSION} with its Linux CPU prebuilt into ${dir}: 3 steps, about ` +
      `${PREBUILT_COST.seconds} s the first time, at once afterwards`,
  );
  return build(dir, root);
}

if (process.argv[1] === self) {
  nodeLlamaCppProject()
    .then((p) => process.stdout.write(`${JSON.stringify(p, null, 2)}\n`))
    .catch((err) => {
      process.stderr.write(`node-llama-cpp-prebuilt: ${err.message}\n`);
      process.exit(1);
    });
}
