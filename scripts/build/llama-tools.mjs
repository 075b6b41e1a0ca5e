#!/usr/bin/env node
// The real llama.cpp tools for the Linux CPU: llama-bench and llama-perplexity, built from the llama.cpp release of the
// newest era of the conformance suite (test/conformance/eras.mjs), out of its node-llama-cpp tarball's
// llama/gitRelease.bundle (fetched and checked by test/conformance/build.mjs). They are what `metal-cap-shim bench` is
// tested with on Linux (test/repo/llama-tools.test.ts, with the tiny models of scripts/build/tiny-gguf.mjs).
//
//   1. fetch: the tarball (pinned integrity), from npm unless cached;
//   2. extract: clone its bundle and write the whole tree at the release into a private temporary folder;
//   3. configure: CMake, as the recipe says (llama-tools-recipe.mjs: Ninja, Release, CPU only, static, clang-19);
//   4. build: the targets llama-bench and llama-perplexity alone;
//   5. install: both programs, the release's vocab-only GGUF (as vocab.gguf) and a tools.json into
//      ${XDG_CACHE_HOME:-~/.cache}/metal-cap-shim/llama-tools/<key>/, through a private mkdtemp folder renamed into
//      place.
//
// Each step is said on stderr as it starts, with the time since the build began; the build step then its ninja
// counts and the time left at the rate so far (a line rewritten in place on a terminal, one every BUILD_EVERY_MS
// elsewhere). The temporary folder is removed when the build ends or fails, and on SIGINT, SIGTERM or SIGHUP
// (cleanup-on-signal.mjs), which exit 130, 143 and 129. <key> hashes the recipe's data and the compilers'
// `--version` (recipeKey), never this script's text: how the build reports itself does not build it again.
// `node scripts/build/llama-tools.mjs` builds if needed and prints the JSON of llamaTools().
import { execFileSync, spawn } from 'node:child_process';
import {
  copyFileSync,
  createWriteStream,
  lstatSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  writeFileSync,
} from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { archiveTree, cloneBundle, fetchTarball } from '../../test/conformance/build.mjs';
import { cleanupOnSignal } from './cleanup-on-signal.mjs';
import { RECIPE, recipeKey, TOOLS_ERA } from './llama-tools-recipe.mjs';
import { formatDuration, inPlace, ninjaStatus, timeLeft } from './progress.mjs';
import { assertPrivate, privateCacheRoot, userCachePath } from './user-cache.mjs';

export { TOOLS_ERA };

const self = fileURLToPath(import.meta.url);

const { vocab: VOCAB, cc: CC, cxx: CXX, cmake: CMAKE_OPTIONS, targets: TARGETS, generator: GENERATOR } = RECIPE;

/** The tools cannot be had here: no CMake, Ninja, clang-19 or git, or no tarball (its message says which). */
export class ToolsUnavailable extends Error {
  constructor(message) {
    super(message);
    this.name = 'ToolsUnavailable';
  }
}

/**
 * What a cold build costs on the shared 2-core Linux machine, other builds running: the minutes (the cold builds
 * timed there; 21 min 15 s on 2026-12-06 at a load of 5 to 10), the tarball fetched into the user cache (unless
 * there), the temporary folder near its largest (248 to 267 MB left by builds stopped late), and what the cache keeps.
 */
export const TOOLS_COST = Object.freeze({ minutes: '12–21', tarballMB: 36, tempMB: 260, keptMB: 22 });

/** The build's steps, in order, as its progress names them. */
export const TOOLS_STEPS = Object.freeze(['fetch', 'extract', 'configure', 'build', 'install']);

/** How often the build's counts are said off a terminal (on one, every ninja line rewrites the status). */
const BUILD_EVERY_MS = 15_000;

function log(line) {
  process.stderr.write(`llama-tools: ${line}\n`);
}

function elapsed(started) {
  return formatDuration(Date.now() - started);
}

/** Says that step `name` begins, with what it does, and the time since the build began. */
function stepLine(name, doing, started) {
  return `[${TOOLS_STEPS.indexOf(name) + 1}/${TOOLS_STEPS.length}] ${name}: ${doing} (${elapsed(started)})`;
}

/** The build step's status: ninja's counts, the time the step has taken and the time left at its rate so far. */
export function buildStatus({ done, total }, stepMs) {
  const left = timeLeft(done, total, stepMs);
  const eta = left === null ? 'time left: after the first target' : `about ${formatDuration(left)} left`;
  return `build ${done}/${total} targets, ${formatDuration(stepMs)}, ${eta}`;
}

/**
 * A reporter of ninja's status lines, written with `write`: on a terminal each rewrites one line in place; elsewhere
 * a line at most every BUILD_EVERY_MS, and always the last target's. `end()` says the last status not yet said and
 * ends the line.
 */
export function buildReporter({ tty, write = (text) => process.stderr.write(text), now = Date.now }) {
  const began = now();
  let lastShown = null;
  let pending = null;
  const show = (status) => {
    const line = `llama-tools: ${buildStatus(status, now() - began)}`;
    write(tty ? `\r\x1b[K${line}` : `${line}\n`);
    lastShown = now();
    pending = null;
  };
  return {
    line(text) {
      const status = ninjaStatus(text);
      if (status === null) return;
      if (tty || lastShown === null || now() - lastShown >= BUILD_EVERY_MS || status.done === status.total)
        show(status);
      else pending = status;
    },
    end() {
      if (pending !== null) show(pending);
      if (tty && lastShown !== null) write('\n');
    },
  };
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

/**
 * Runs a command with its output in `logFile`; calls `onLine` per line; fails with the log's tail. The child leads
 * its own process group, registered with `guard`, so a signal stops the compilers under it too.
 */
function runLogged(cmd, args, { cwd, logFile, guard, onLine = () => {} }) {
  return new Promise((resolve, reject) => {
    const out = createWriteStream(logFile, { flags: 'a' });
    const child = guard.child(spawn(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true }));
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
  const guard = cleanupOnSignal({ log });
  try {
    return await buildSteps(dir, root, started, guard);
  } catch (err) {
    // Stopped by a signal: its handler removes the folders and exits with the signal's code; nothing more is said.
    if (guard.stopping() !== null) await new Promise(() => {});
    throw err;
  } finally {
    guard.release();
  }
}

async function buildSteps(dir, root, started, guard) {
  log(stepLine('fetch', `${TOOLS_ERA.package} (${TOOLS_COST.tarballMB} MB from npm, unless cached)`, started));
  let tgz;
  try {
    tgz = await fetchTarball(TOOLS_ERA.package, TOOLS_ERA.integrity);
  } catch (err) {
    throw new ToolsUnavailable(`cannot fetch ${TOOLS_ERA.package}: ${err.message}`);
  }
  const work = guard.folder(mkdtempSync(path.join(tmpdir(), 'mcs-llama-tools-')));
  log(
    stepLine(
      'extract',
      `llama.cpp ${TOOLS_ERA.id} into ${work} (about ${TOOLS_COST.tempMB} MB with the build)`,
      started,
    ),
  );
  const { repo, tag, commit } = await cloneBundle(tgz, work);
  if (tag !== TOOLS_ERA.id)
    throw new Error(`${TOOLS_ERA.package} ships llama.cpp ${tag}, eras.mjs says ${TOOLS_ERA.id}`);
  const src = path.join(work, 'llama.cpp');
  await archiveTree(repo, src);

  log(
    stepLine(
      'configure',
      `CMake, ${GENERATOR}, ${CMAKE_OPTIONS.length} options, llama.cpp ${tag} (${commit})`,
      started,
    ),
  );
  const out = path.join(work, 'build');
  const logFile = path.join(work, 'build.log');
  let warnings = 0;
  await runLogged(
    'cmake',
    ['-S', src, '-B', out, '-G', GENERATOR, ...CMAKE_OPTIONS, `-DLLAMA_BUILD_COMMIT=${commit}`],
    {
      logFile,
      guard,
      onLine: (line) => (/^CMake Warning/.test(line) ? warnings++ : undefined),
    },
  );

  const jobs = availableParallelism();
  log(stepLine('build', `${TARGETS.join(' and ')} with ${jobs} jobs (${warnings} CMake warnings)`, started));
  const reporter = buildReporter({ tty: inPlace(process.stderr) });
  try {
    await runLogged('cmake', ['--build', out, '--parallel', String(jobs), '--target', ...TARGETS], {
      logFile,
      guard,
      onLine: reporter.line,
    });
  } finally {
    reporter.end();
  }

  log(stepLine('install', `${TARGETS.join(', ')} and vocab.gguf into ${dir}`, started));
  const staging = guard.folder(mkdtempSync(path.join(root, '.staging-')));
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
  } catch (err) {
    // Another build of the same key finished first: keep it (the guard removes this one).
    if (err.code !== 'EEXIST' && err.code !== 'ENOTEMPTY') throw err;
  }
  log(`built in ${elapsed(started)}: ${dir}`);
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
  const { dir, cached } = toolsCacheEntry(env);
  if (cached !== null) {
    log(`cached: ${dir}`);
    return cached;
  }
  log(
    `building llama-bench and llama-perplexity into ${dir}: ${TOOLS_STEPS.length} steps, ${TOOLS_COST.minutes} min on 2 ` +
      `shared cores, ${TOOLS_COST.tempMB} MB in a temporary folder while it runs, ${TOOLS_COST.keptMB} MB kept`,
  );
  return build(dir, path.dirname(dir));
}

/** This machine's cache key: the recipe's data and the compilers' versions (recipeKey). Checks the toolchain. */
export function toolsCacheKey() {
  return recipeKey(checkToolchain());
}

/** Where this machine's tools live in the cache, and what is there (null until built). */
function toolsCacheEntry(env) {
  const dir = path.join(privateCacheRoot(toolsCacheRoot(env)), toolsCacheKey());
  return { dir, cached: readCached(dir) };
}

/** The cached tools, or null when they would have to be built (llamaTools without building). */
export function cachedLlamaTools({ env = process.env } = {}) {
  return toolsCacheEntry(env).cached;
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
