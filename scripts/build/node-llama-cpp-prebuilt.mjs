#!/usr/bin/env node
// A project that embeds node-llama-cpp with its Linux CPU prebuilt, for testing `metal-cap-shim bench
// --node-llama-cpp` on Linux (test/bench/node-llama-cpp.test.ts): the node-llama-cpp release of the newest conformance
// era (its tarball, fetched and checked by test/conformance/build.mjs) and its prebuilt binary package
// @node-llama-cpp/linux-x64 of the same version (PREBUILT, pinned by integrity, fetched with `npm pack` the same way),
// installed with npm into ${XDG_CACHE_HOME:-~/.cache}/metal-cap-shim/node-llama-cpp/<key>/ (node-llama-cpp's own
// dependencies come from the registry; no install scripts run, so nothing is downloaded or built by node-llama-cpp).
// Beside it, vocab.gguf: the release's vocab-only models/ggml-vocab-llama-spm.gguf, for scripts/build/tiny-gguf.mjs.
//
// <key> hashes both integrities and this script. The project is built in a private mkdtemp folder renamed into place;
// project.json is written last. `node scripts/build/node-llama-cpp-prebuilt.mjs` prints nodeLlamaCppProject()'s JSON.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { archiveTree, cloneBundle, fetchTarball } from '../../test/conformance/build.mjs';
import { ERAS } from '../../test/conformance/eras.mjs';

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

const VOCAB = 'models/ggml-vocab-llama-spm.gguf';

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
    .update(`${NODE_LLAMA_CPP.integrity}\0${PREBUILT.integrity}\0`)
    .update(readFileSync(self))
    .digest('hex')
    .slice(0, 16);
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
  let tarballs;
  try {
    tarballs = [
      await fetchTarball(NODE_LLAMA_CPP.package, NODE_LLAMA_CPP.integrity),
      await fetchTarball(PREBUILT.package, PREBUILT.integrity),
    ];
  } catch (err) {
    throw new PrebuiltUnavailable(`cannot fetch node-llama-cpp ${VERSION} or its prebuilt: ${err.message}`);
  }
  const staging = mkdtempSync(path.join(root, '.staging-'));
  const work = mkdtempSync(path.join(tmpdir(), 'mcs-nlc-prebuilt-'));
  try {
    writeFileSync(
      path.join(staging, 'package.json'),
      `${JSON.stringify({ name: 'bench-node-llama-cpp-project', private: true, type: 'module' }, null, 2)}\n`,
    );
    // --omit=optional: node-llama-cpp's other prebuilts (CUDA, Vulkan, other systems) stay out; the one given is in.
    await run(
      'npm',
      ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--omit=optional', '--silent', ...tarballs],
      { cwd: staging, maxBuffer: 16 << 20 },
    );
    const { repo, tag } = await cloneBundle(tarballs[0], work);
    await archiveTree(repo, path.join(work, 'src'), [VOCAB]);
    copyFileSync(path.join(work, 'src', VOCAB), path.join(staging, 'vocab.gguf'));
    const meta = { version: VERSION, release: tag, prebuilt: PREBUILT.package, vocab: VOCAB };
    writeFileSync(path.join(staging, 'project.json'), `${JSON.stringify(meta, null, 2)}\n`);
    try {
      renameSync(staging, dir);
    } catch (err) {
      // Another install of the same key finished first: keep it.
      if (err.code !== 'EEXIST' && err.code !== 'ENOTEMPTY') throw err;
      rmSync(staging, { recursive: true, force: true });
    }
  } catch (err) {
    rmSync(staging, { recursive: true, force: true });
    throw err;
  } finally {
    rmSync(work, { recursive: true, force: true });
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
  return readCached(dir) ?? build(dir, root);
}

if (process.argv[1] === self) {
  nodeLlamaCppProject()
    .then((p) => process.stdout.write(`${JSON.stringify(p, null, 2)}\n`))
    .catch((err) => {
      process.stderr.write(`node-llama-cpp-prebuilt: ${err.message}\n`);
      process.exit(1);
    });
}
