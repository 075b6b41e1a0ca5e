#!/usr/bin/env node
// The real llama.cpp tools for the Linux CPU: llama-bench and llama-perplexity, built from the llama.cpp release of the
// newest era of the conformance suite (test/conformance/eras.mjs), out of its node-llama-cpp tarball's
// llama/gitRelease.bundle (fetched and checked by test/conformance/build.mjs). They are what `metal-cap-shim bench` is
// tested with on Linux (test/repo/llama-tools.test.ts, with the tiny models of scripts/build/tiny-gguf.mjs).
//
//   1. fetch the tarball (pinned integrity), clone its bundle and write the whole tree at the release into a private
//      temporary folder;
//   2. configure with CMake (Ninja, Release, CPU only: no Metal, OpenMP, server, tests, examples, OpenSSL, ccache;
//      static libraries) and build the targets llama-bench and llama-perplexity alone, with clang-19;
//   3. install both programs, the release's vocab-only models/ggml-vocab-llama-spm.gguf (as vocab.gguf) and a
//      tools.json into ${XDG_CACHE_HOME:-~/.cache}/metal-cap-shim/llama-tools/<key>/, through a private mkdtemp
//      folder renamed into place.
//
// <key> hashes the tarball's integrity, both compilers' `--version` and this script, so a warm cache is found at once
// and a change to any of them builds again. `node scripts/build/llama-tools.mjs` builds if needed and prints the JSON
// of llamaTools(); progress goes to stderr.
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  createWriteStream,
  lstatSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { archiveTree, cloneBundle, fetchTarball } from '../../test/conformance/build.mjs';
import { ERAS } from '../../test/conformance/eras.mjs';
import { assertPrivate, privateCacheRoot, userCachePath } from './user-cache.mjs';

const self = fileURLToPath(import.meta.url);

/** The era the tools come from: the newest. */
export const TOOLS_ERA = ERAS[ERAS.length - 1];

/** The vocab-only GGUF taken from the release: SentencePiece (llama), 32000 tokens, 0.7 MB. */
const VOCAB = 'models/ggml-vocab-llama-spm.gguf';

/** The compilers, clang-19 as the conformance build uses. */
const CC = 'clang-19';
const CXX = 'clang++-19';

/** CMake's cache entries: CPU only, static, and nothing but what the two programs link. */
const CMAKE_OPTIONS = [
  '-DCMAKE_BUILD_TYPE=Release',
  `-DCMAKE_C_COMPILER=${CC}`,
  `-DCMAKE_CXX_COMPILER=${CXX}`,
  '-DBUILD_SHARED_LIBS=OFF',
  '-DGGML_METAL=OFF',
  '-DGGML_NATIVE=OFF',
  '-DGGML_OPENMP=OFF',
  '-DGGML_CCACHE=OFF',
  '-DGGML_BLAS=OFF',
  // Deprecated in this release (a no-op, kept so an older release would not try to find libcurl).
  '-DLLAMA_CURL=OFF',
  '-DLLAMA_OPENSSL=OFF',
  '-DLLAMA_BUILD_TESTS=OFF',
  '-DLLAMA_BUILD_EXAMPLES=OFF',
  '-DLLAMA_BUILD_SERVER=OFF',
  '-DLLAMA_BUILD_APP=OFF',
  '-DLLAMA_BUILD_UI=OFF',
  '-DLLAMA_TOOLS_INSTALL=OFF',
];
const TARGETS = ['llama-bench', 'llama-perplexity'];

/** The tools cannot be had here: no CMake, Ninja, clang-19 or git, or no tarball (its message says which). */
export class ToolsUnavailable extends Error {
  constructor(message) {
    super(message);
    this.name = 'ToolsUnavailable';
  }
}

function log(line) {
  process.stderr.write(`llama-tools: ${line}\n`);
}

function elapsed(started) {
  const s = Math.round((Date.now() - started) / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

/** `<cmd> --version`'s output, or a ToolsUnavailable naming what to install. */
function versionOf(cmd, install) {
  try {
    return execFileSync(cmd, ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    throw new ToolsUnavailable(`${cmd} not found: install ${install}`);
  }
}

/** The programs the build needs, each checked; returns the compilers' versions (part of the cache key). */
function checkToolchain() {
  versionOf('cmake', 'cmake (3.14 or later)');
  versionOf('ninja', 'ninja-build');
  versionOf('git', 'git');
  return `${versionOf(CC, 'clang-19')}\0${versionOf(CXX, 'clang-19')}`;
}

/** The cache root: ${XDG_CACHE_HOME:-~/.cache}/metal-cap-shim/llama-tools (user-cache.mjs). */
export function toolsCacheRoot(env = process.env) {
  return userCachePath('llama-tools', env);
}

/** The cache key: the tarball's integrity, the compilers and this script. */
function cacheKey(compilers) {
  return createHash('sha256')
    .update(`${TOOLS_ERA.integrity}\0${compilers}\0`)
    .update(readFileSync(self))
    .digest('hex')
    .slice(0, 16);
}

/** What a cache folder holds, or null when it is not a complete one (tools.json is written last). */
function readCached(dir) {
  try {
    assertPrivate(dir);
    const meta = JSON.parse(readFileSync(path.join(dir, 'tools.json'), 'utf8'));
    const files = {
      bench: path.join(dir, 'llama-bench'),
      perplexity: path.join(dir, 'llama-perplexity'),
      vocab: path.join(dir, 'vocab.gguf'),
    };
    for (const file of Object.values(files)) if (!lstatSync(file).isFile()) return null;
    return { ...files, release: meta.release, commit: meta.commit, dir };
  } catch (err) {
    if (err.code === 'ENOENT') return null;
    throw err;
  }
}

/** Runs a command with its output in `logFile`; calls `onLine` per line; fails with the log's tail. */
function runLogged(cmd, args, { cwd, logFile, onLine = () => {} }) {
  return new Promise((resolve, reject) => {
    const out = createWriteStream(logFile, { flags: 'a' });
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let partial = '';
    const feed = (chunk) => {
      out.write(chunk);
      const lines = (partial + chunk.toString('utf8')).split('\n');
      partial = lines.pop();
      for (const line of lines) onLine(line);
    };
    child.stdout.on('data', feed);
    child.stderr.on('data', feed);
    child.on('error', reject);
    child.on('close', (code) => {
      out.end(() => {
        if (code === 0) return resolve();
        const tail = readFileSync(logFile, 'utf8').split('\n').slice(-40).join('\n');
        reject(new Error(`${cmd} ${args[0]} … exited with ${code}; the end of its output:\n${tail}`));
      });
    });
  });
}

async function build(dir, root) {
  const started = Date.now();
  let tgz;
  try {
    tgz = await fetchTarball(TOOLS_ERA.package, TOOLS_ERA.integrity);
  } catch (err) {
    throw new ToolsUnavailable(`cannot fetch ${TOOLS_ERA.package}: ${err.message}`);
  }
  const work = mkdtempSync(path.join(tmpdir(), 'mcs-llama-tools-'));
  let staging = null;
  try {
    const { repo, tag, commit } = await cloneBundle(tgz, work);
    if (tag !== TOOLS_ERA.id)
      throw new Error(`${TOOLS_ERA.package} ships llama.cpp ${tag}, eras.mjs says ${TOOLS_ERA.id}`);
    const src = path.join(work, 'llama.cpp');
    await archiveTree(repo, src);
    log(`llama.cpp ${tag} (${commit}) from ${TOOLS_ERA.package} in ${work} (${elapsed(started)})`);

    const out = path.join(work, 'build');
    const logFile = path.join(work, 'build.log');
    let warnings = 0;
    await runLogged(
      'cmake',
      ['-S', src, '-B', out, '-G', 'Ninja', ...CMAKE_OPTIONS, `-DLLAMA_BUILD_COMMIT=${commit}`],
      { logFile, onLine: (line) => (/^CMake Warning/.test(line) ? warnings++ : undefined) },
    );
    log(`configured: ${CMAKE_OPTIONS.length} options, ${warnings} CMake warnings (${elapsed(started)})`);

    let lastShown = -1;
    await runLogged('cmake', ['--build', out, '--parallel', String(availableParallelism()), '--target', ...TARGETS], {
      logFile,
      onLine: (line) => {
        const m = /^\[(\d+)\/(\d+)\]/.exec(line);
        if (m === null) return;
        const tenth = Math.floor((10 * Number(m[1])) / Number(m[2]));
        if (tenth > lastShown) {
          lastShown = tenth;
          log(`build [${m[1]}/${m[2]}] ${tenth * 10} % (${elapsed(started)})`);
        }
      },
    });

    staging = mkdtempSync(path.join(root, '.staging-'));
    for (const target of TARGETS) copyFileSync(path.join(out, 'bin', target), path.join(staging, target));
    copyFileSync(path.join(src, VOCAB), path.join(staging, 'vocab.gguf'));
    const meta = {
      release: tag,
      commit,
      package: TOOLS_ERA.package,
      vocab: VOCAB,
      cmake: CMAKE_OPTIONS,
      compiler: CXX,
    };
    writeFileSync(path.join(staging, 'tools.json'), `${JSON.stringify(meta, null, 2)}\n`);
    try {
      renameSync(staging, dir);
      staging = null;
    } catch (err) {
      // Another build of the same key finished first: keep it.
      if (err.code !== 'EEXIST' && err.code !== 'ENOTEMPTY') throw err;
    }
    log(`built in ${elapsed(started)}: ${dir}`);
  } finally {
    rmSync(work, { recursive: true, force: true });
    if (staging !== null) rmSync(staging, { recursive: true, force: true });
  }
  const built = readCached(dir);
  if (built === null) throw new Error(`${dir} is incomplete after the build`);
  return built;
}

/**
 * llama-bench and llama-perplexity for this machine's CPU, built once into the cache (toolsCacheRoot()/<key>/):
 * `{ bench, perplexity, vocab, release, commit, dir }`. Throws ToolsUnavailable when CMake, Ninja, git, clang-19 or
 * the tarball cannot be had; any other error is a failed build.
 */
export async function llamaTools({ env = process.env } = {}) {
  const compilers = checkToolchain();
  const root = privateCacheRoot(toolsCacheRoot(env));
  const dir = path.join(root, cacheKey(compilers));
  const cached = readCached(dir);
  if (cached !== null) {
    log(`cached: ${dir}`);
    return cached;
  }
  log(`building llama-bench and llama-perplexity into ${dir}`);
  return build(dir, root);
}

/** Checks what llamaTools needs without building: the toolchain and the tarball (fetched when not cached). */
export async function llamaToolsPrerequisites() {
  checkToolchain();
  try {
    await fetchTarball(TOOLS_ERA.package, TOOLS_ERA.integrity);
  } catch (err) {
    throw new ToolsUnavailable(`cannot fetch ${TOOLS_ERA.package}: ${err.message}`);
  }
}

if (process.argv[1] === self) {
  llamaTools()
    .then((tools) => process.stdout.write(`${JSON.stringify(tools, null, 2)}\n`))
    .catch((err) => {
      process.stderr.write(`llama-tools: ${err.message}\n`);
      process.exit(1);
    });
}
