#!/usr/bin/env node
// Builds MLX's own architecture parsing against a stand-in device, for test/conformance/mlx.test.ts
// (test/conformance/README.md, "MLX"). Nothing of MLX is vendored: for each pinned commit of MLX_COMMITS it
//
//   1. reads the MLX source files it needs at that commit: from build/conformance/cache/mlx/ when a copy is there,
//      else from a local clone named by MLX_SOURCE_GIT (a git directory), else from GitHub
//      (raw.githubusercontent.com/ml-explore/mlx/<commit>/<path>), and checks each file's SHA-256 against the pin;
//   2. takes out of them, by their own text, the parts the harness compiles: Device::Device from its first
//      `arch_ =` to the MLX_MAX_MB_PER_BUFFER override (device.cpp), is_nax_available (device.h or device.cpp),
//      get_qmv_batch_limit (quantized.cpp), and env::get_var with the env:: functions those read (utils.cpp,
//      utils.h);
//   3. compiles src/mlx-harness.cpp with them (clang++-19, else c++) into build/conformance/mlx/<commit>-<key>/.
//
// <key> hashes the harness and the extracted parts, so a warm build is reused. Run directly
// (`node test/conformance/mlx-build.mjs`) it builds and prints what it built.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '..', '..');
const cacheDir = path.join(repoRoot, 'build', 'conformance', 'cache', 'mlx');
const buildDir = path.join(repoRoot, 'build', 'conformance', 'mlx');

/**
 * The MLX commits compiled, each with the release it is (an MLX rule set's first release or one inside it) and the
 * SHA-256 of every file read. v0.30.6 parses unchecked, v0.31.0 checks digits and reads MLX_METAL_GPU_ARCH,
 * v0.32.1 has the generation tiers, 846d176 is main as read for 0.32.2 (untagged).
 */
export const MLX_COMMITS = Object.freeze([
  {
    release: 'v0.30.6',
    commit: '185b06d9efc1c869540eccfb5baff853fff3659d',
    nax: 'mlx/backend/metal/device.h',
    files: {
      'mlx/backend/metal/device.cpp': '2f26f909bca2318e10caac06e8a20e09d5494698edb332cbc7681a653a3bad7f',
      'mlx/backend/metal/device.h': '9de843b614a75a3fdeaa5964f9ccf5d15db3d76148181102afb28ec83240d4f5',
      'mlx/backend/metal/quantized.cpp': 'f2d2d9f99faec243f8a06ad249e122bc4a0ee6f6c5ba9efea5f7f08bc127f5a0',
      'mlx/utils.h': '6d0112d7b83260ece8c0df845fab1a986d75be460159c24d6087577bbfe26e78',
      'mlx/utils.cpp': 'a910cb4b94ac1944dad647fa915f1c9c35acc0be7836217c82b4ac0c46088bdf',
    },
  },
  {
    release: 'v0.31.0',
    commit: '365d6f29b47686a9f5401f6a9ec5825fee162d69',
    nax: 'mlx/backend/metal/device.h',
    files: {
      'mlx/backend/metal/device.cpp': 'd2000ba53a5f4137c91f0a6222ae86cc3c2c0c3d69dfda2f421f60bd55813a98',
      'mlx/backend/metal/device.h': '9de843b614a75a3fdeaa5964f9ccf5d15db3d76148181102afb28ec83240d4f5',
      'mlx/backend/metal/quantized.cpp': '2c33ba7baffcc891a7e1171f88b511cd423dd8cfa20b79bbd0b252e857a13281',
      'mlx/utils.h': '352624041e0eeb02ddff4f4038cf631a96c6bf92a7ac627b1655b17c61cf8ff8',
      'mlx/utils.cpp': '253e6e085c75a6534a4701ed41f72e4280cc53b93747a6cfa17519af4f772be7',
    },
  },
  {
    release: 'v0.32.1',
    commit: '3a6219917e4535575ce5bce2fc2ba27a483a709b',
    nax: 'mlx/backend/metal/device.cpp',
    files: {
      'mlx/backend/metal/device.cpp': '008b67e599f5508ab670a91f2ea80372162a8767b5226fbbeb9f3d23c85cdb7c',
      'mlx/backend/metal/quantized.cpp': 'c66c9628ba48c149a4195b20e5b8d2929af14fef5929d91d576b5fcdd5a4a4a7',
      'mlx/utils.h': 'a68bec1e9ce61cb9aa9a1f01a3f95024609b9656c1721c323f5e410e68f9d9e7',
      'mlx/utils.cpp': '73f2bec778ec74c99fba52fb6bb192ca2e3ffb0bc7272050e940b743838d1d9f',
    },
  },
  {
    release: '0.32.2',
    commit: '846d176227a0ac13d2667e58d2bb68b322109ab0',
    nax: 'mlx/backend/metal/device.cpp',
    files: {
      'mlx/backend/metal/device.cpp': '008b67e599f5508ab670a91f2ea80372162a8767b5226fbbeb9f3d23c85cdb7c',
      'mlx/backend/metal/quantized.cpp': 'c8e05c172b37887c713db0a62343f73710fe1fde14306a995f52149473cfe291',
      'mlx/utils.h': 'a68bec1e9ce61cb9aa9a1f01a3f95024609b9656c1721c323f5e410e68f9d9e7',
      'mlx/utils.cpp': '73f2bec778ec74c99fba52fb6bb192ca2e3ffb0bc7272050e940b743838d1d9f',
    },
  },
]);

const sha256 = (text) => createHash('sha256').update(text).digest('hex');

/**
 * MLX's sources could not be reached (no cache, no MLX_SOURCE_GIT, GitHub unreachable): the conformance test skips and
 * says this message. A file that arrives with another hash is never this: it is an error.
 */
export class MlxSourceUnreachable extends Error {}

/** One MLX file at a commit, checked against its pin: from the cache, a local clone, or GitHub. */
export async function readMlxFile(commit, file, expected) {
  const cached = path.join(cacheDir, commit, file);
  if (existsSync(cached)) {
    const text = readFileSync(cached, 'utf8');
    if (sha256(text) === expected) return text;
  }
  let text;
  const gitDir = process.env.MLX_SOURCE_GIT;
  if (gitDir !== undefined && gitDir !== '') {
    text = (await run('git', ['--git-dir', gitDir, 'show', `${commit}:${file}`], { maxBuffer: 64 << 20 })).stdout;
  } else {
    const url = `https://raw.githubusercontent.com/ml-explore/mlx/${commit}/${file}`;
    const offline = '(set MLX_SOURCE_GIT to a clone of ml-explore/mlx to read it offline)';
    const res = await fetch(url).catch((e) => {
      throw new MlxSourceUnreachable(`${url}: ${e.cause?.code ?? e.message} ${offline}`);
    });
    if (!res.ok) throw new MlxSourceUnreachable(`${url}: HTTP ${res.status} ${offline}`);
    text = await res.text();
  }
  const got = sha256(text);
  if (got !== expected) throw new Error(`${file} at MLX ${commit}: SHA-256 ${got}, pinned ${expected}`);
  mkdirSync(path.dirname(cached), { recursive: true });
  writeFileSync(cached, text);
  return text;
}

/** The text from the line holding `start` through the brace that closes the block it opens. */
export function takeBlock(text, start, what) {
  const at = text.indexOf(start);
  if (at < 0) throw new Error(`${what}: "${start}" not found`);
  const open = text.indexOf('{', at);
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === '{') depth++;
    else if (text[i] === '}' && --depth === 0) return text.slice(text.lastIndexOf('\n', at) + 1, i + 1);
  }
  throw new Error(`${what}: the block of "${start}" does not close`);
}

/** The lines of `text` from the one holding `from` through the one holding `to`. */
export function takeLines(text, from, to, what) {
  const a = text.indexOf(from);
  const b = a < 0 ? -1 : text.indexOf(to, a);
  if (a < 0 || b < 0) throw new Error(`${what}: "${from}" … "${to}" not found`);
  return text.slice(text.lastIndexOf('\n', a) + 1, text.indexOf('\n', b) + 1);
}

/** The parts of one commit the harness compiles, each taken from MLX's own text. */
export function extractParts(files, pin) {
  const device = files['mlx/backend/metal/device.cpp'];
  const ctor = takeBlock(device, 'Device::Device()', 'Device::Device');
  const init = takeLines(
    ctor,
    '  arch_ = ',
    'max_mb_per_buffer_ = env::max_mb_per_buffer(max_mb_per_buffer_);',
    'Device::Device',
  );
  const naxFile = files[pin.nax];
  const nax = takeBlock(
    naxFile,
    naxFile.includes('inline bool is_nax_available()') ? 'inline bool is_nax_available()' : 'bool is_nax_available()',
    'is_nax_available',
  );
  const quantized = files['mlx/backend/metal/quantized.cpp'];
  const qmv = quantized.includes('inline int get_qmv_batch_limit(')
    ? `#define HARNESS_HAS_QMV 1\n${takeBlock(quantized, 'inline int get_qmv_batch_limit(', 'get_qmv_batch_limit')}`
    : '';
  const utilsCpp = files['mlx/utils.cpp'];
  const utilsH = files['mlx/utils.h'];
  const env = [
    takeBlock(utilsCpp, 'int get_var(const char* name, int default_value) {', 'get_var'),
    utilsCpp.includes('std::string get_var(const char* name, const char* default_value) {')
      ? takeBlock(utilsCpp, 'std::string get_var(const char* name, const char* default_value) {', 'get_var')
      : '',
    takeBlock(utilsH, 'inline int max_ops_per_buffer(', 'max_ops_per_buffer'),
    takeBlock(utilsH, 'inline int max_mb_per_buffer(', 'max_mb_per_buffer'),
    utilsH.includes('inline const std::string& metal_gpu_arch()')
      ? takeBlock(utilsH, 'inline const std::string& metal_gpu_arch()', 'metal_gpu_arch')
      : '',
  ].join('\n');
  return { init, nax, qmv, env };
}

function compiler() {
  for (const cxx of ['clang++-19', 'c++']) {
    for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
      if (dir !== '' && existsSync(path.join(dir, cxx))) return cxx;
    }
  }
  throw new Error('no C++ compiler (clang++-19 or c++) on PATH');
}

/** Builds the harness for every pinned commit (or those given); returns each with its executable. */
export async function buildMlxHarness(commits = MLX_COMMITS) {
  const harness = readFileSync(path.join(here, 'src', 'mlx-harness.cpp'), 'utf8');
  const cxx = compiler();
  const built = [];
  for (const pin of commits) {
    const files = {};
    for (const [file, hash] of Object.entries(pin.files)) files[file] = await readMlxFile(pin.commit, file, hash);
    const parts = extractParts(files, pin);
    const key = sha256(JSON.stringify([harness, parts, cxx])).slice(0, 12);
    const dir = path.join(buildDir, `${pin.commit.slice(0, 12)}-${key}`);
    const exe = path.join(dir, 'mlx-harness');
    if (!existsSync(exe)) {
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, 'mlx-device-init.inc'), parts.init);
      writeFileSync(path.join(dir, 'mlx-nax.inc'), parts.nax);
      writeFileSync(path.join(dir, 'mlx-qmv.inc'), parts.qmv);
      writeFileSync(path.join(dir, 'mlx-env.inc'), parts.env);
      await run(cxx, ['-std=c++17', '-O1', '-w', '-I', dir, path.join(here, 'src', 'mlx-harness.cpp'), '-o', exe]);
    }
    built.push({ ...pin, exe, hasQmv: parts.qmv !== '' });
  }
  return built;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const b of await buildMlxHarness()) console.log(`${b.release} (${b.commit.slice(0, 9)}): ${b.exe}`);
}
