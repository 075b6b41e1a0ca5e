#!/usr/bin/env node
// llama-bench's JSON output as each release the repository fetches prints it, derived from that release's own source:
// the conformance eras (test/conformance/eras.mjs) and OLDER_SOURCES, each a node-llama-cpp tarball whose
// llama/gitRelease.bundle holds tools/llama-bench/llama-bench.cpp (examples/llama-bench/ before the tools/ folder).
// There `test::get_fields()` lists the fields in print order and `test::get_field_type()` says how each is printed
// (STRING quoted and escaped, BOOL as true/false, INT and FLOAT as the number). The printers are one of PRINTERS, each
// known by the sha256 of its source; a source whose printers are none of them is refused, so a release that changes
// them is read by a person before a fixture claims its shape.
//
// Each source becomes test/fixtures/bench/llama-bench-eras/<id>.json: where it came from (package, integrity,
// release, commit, file), the fields with their types, and two tests (a prompt and a generation, SAMPLE_RECORDS:
// values as llama-bench's get_values() gives them, as text) printed in that release's shape by each printer it has.
// test/bench/llama-bench.test.ts parses them; test/repo/llama-bench-eras.test.ts derives them again and compares.
//
//   node scripts/build/llama-bench-eras.mjs           writes the fixtures
//   node scripts/build/llama-bench-eras.mjs --check   fails when a fixture is not what the sources give
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { fetchTarball } from '../../test/conformance/build.mjs';
import { ERAS } from '../../test/conformance/eras.mjs';

const run = promisify(execFile);
const self = fileURLToPath(import.meta.url);
const repoRoot = path.resolve(path.dirname(self), '..', '..');
export const fixturesDir = path.join(repoRoot, 'test', 'fixtures', 'bench', 'llama-bench-eras');

/** Where llama-bench.cpp is in a release's tree: tools/ from mid-2025, examples/ before. */
const SOURCE_PATHS = ['tools/llama-bench/llama-bench.cpp', 'examples/llama-bench/llama-bench.cpp'];

/**
 * The printers' source (from escape_json to the markdown printer, whitespace collapsed) by sha256, with the formats
 * each prints as renderJson and renderJsonl reproduce them: the JSON printer alone (b3658), then JSON and JSON lines
 * (b4753 to v0.5.0). The JSON they print is the same.
 */
export const PRINTERS = Object.freeze({
  '0ec707f8b96cad916b27bd1cc432874aefd4fb2908824ca60c53e54ca9748d8a': ['json'],
  '8d64ff2c9fdffc693b03da37b7ff521b20e2419276864186b151d8c594d22f6a': ['json', 'jsonl'],
});

/**
 * Releases before the conformance eras, read for llama-bench's older shape alone: one boolean per backend (`cuda`,
 * `vulkan`, `kompute`, `metal`, `sycl`, `gpu_blas`, `blas`) before the one `backends` string, no `n_depth`, no JSON lines.
 */
export const OLDER_SOURCES = Object.freeze([
  {
    id: 'b3658',
    package: 'node-llama-cpp@2.8.16',
    integrity: 'sha512-Tcb6a/q+uoJg9od8sncsYf+I0AK0qw7kVaf7ogFY/MndWiEQBO+zzjWuCs+a4zMq5Xa2EzULaMrofs//7nkt8A==',
  },
]);

/** Every source a fixture is derived from, oldest first. */
export const SOURCES = Object.freeze([
  ...OLDER_SOURCES,
  ...ERAS.map((e) => ({ id: e.id, package: e.package, integrity: e.integrity })),
]);

/** What both tests of the fixtures share: the build, and a Mac's Metal and BLAS (Accelerate), as one `backends` string
 * or as the older booleans. */
const RUN = {
  build_commit: '1a2b3c4',
  build_number: '7010',
  backends: 'Metal,BLAS',
  metal: '1',
  blas: '1',
  model_filename: '/Users/me/models/llama "3.2" 1B\\Q4_K_M.gguf',
  model_type: 'llama 1B Q4_K - Medium',
  n_depth: '0',
};

/** The tests the fixtures hold, as get_values() gives their values (text). Fields a release lacks are left out. */
export const SAMPLE_RECORDS = Object.freeze([
  {
    ...RUN,
    n_prompt: '512',
    n_gen: '0',
    test_time: '2026-12-02T16:00:00Z',
    avg_ns: '110803000',
    stddev_ns: '353553',
    avg_ts: '4620.810059',
    stddev_ts: '14.742700',
    samples_ns: ['110553000', '111053000'],
    samples_ts: ['4631.23', '4610.39'],
  },
  {
    ...RUN,
    n_prompt: '0',
    n_gen: '128',
    test_time: '2026-12-02T16:00:02Z',
    avg_ns: '1347368000',
    stddev_ns: '2121320',
    avg_ts: '95.000002',
    stddev_ts: '0.149571',
    samples_ns: ['1345868000', '1348868000'],
    samples_ts: ['95.1058', '94.8943'],
  },
]);

/** A field an era has but the samples do not set: a value of its type, as get_values() would give it. */
const FILLER = { STRING: 'x', BOOL: '0', INT: '0', FLOAT: '0.000000' };

const collapse = (text) => text.replace(/\s+/g, ' ').trim();

/** The text from `start` (included) to `end` (excluded), or an error naming what is missing. */
function between(source, start, end, what) {
  const from = source.indexOf(start);
  const to = from < 0 ? -1 : source.indexOf(end, from + start.length);
  if (from < 0 || to < 0) throw new Error(`${what}: '${start}' … '${end}' not found`);
  return source.slice(from, to);
}

/**
 * The fields of a llama-bench.cpp, in print order, each with the type its printer gives it: `[[name, type], …]`
 * (a fixture holds them as an object in the same order).
 * and the formats its printers print. Throws when the source does not have the shape this reads (get_fields' list,
 * get_field_type's if-chain, the enum STRING, BOOL, INT, FLOAT), or when its printers are none of PRINTERS.
 */
export function benchShape(source, file = 'llama-bench.cpp') {
  const list = between(source, 'static const std::vector<std::string> & get_fields()', '};', `${file} get_fields()`);
  const names = [...list.matchAll(/"([^"\\]+)"/g)].map((m) => m[1]);
  if (names.length === 0 || new Set(names).size !== names.length)
    throw new Error(`${file} get_fields(): no fields, or a field twice`);
  if (!/enum field_type\s*\{\s*STRING,\s*BOOL,\s*INT,\s*FLOAT\s*\};/.test(source))
    throw new Error(`${file}: enum field_type is not { STRING, BOOL, INT, FLOAT }`);
  const body = between(
    source,
    'static field_type get_field_type(const std::string & field) {',
    'std::vector<std::string> get_values()',
    `${file} get_field_type()`,
  );
  const types = new Map();
  for (const m of body.matchAll(/if \(([^{}]*)\)\s*\{\s*return (\w+);\s*\}/g)) {
    for (const f of m[1].matchAll(/field == "([^"]+)"/g)) if (!types.has(f[1])) types.set(f[1], m[2]);
  }
  const fallback = /\}\s*return (\w+);\s*\}\s*$/.exec(body);
  if (fallback === null) throw new Error(`${file} get_field_type(): no final return`);
  const typed = names.map((n) => [n, types.get(n) ?? fallback[1]]);
  for (const [n, t] of typed) if (!(t in FILLER)) throw new Error(`${file}: field ${n} has type ${t}`);
  const printers = collapse(
    between(source, 'static std::string escape_json', 'struct markdown_printer', `${file} printers`),
  );
  const sha = createHash('sha256').update(printers).digest('hex');
  const formats = PRINTERS[sha];
  if (formats === undefined)
    throw new Error(
      `${file}: llama-bench's JSON printers are new (sha256 ${sha}): read them, make renderJson and renderJsonl print as they do, and add them to PRINTERS`,
    );
  return { fields: typed, formats };
}

/** escape_json: `"` and `\` escaped, control characters as \u00XX. */
function escapeJson(value) {
  let out = '';
  for (const c of value) {
    if (c === '"') out += '\\"';
    else if (c === '\\') out += '\\\\';
    else if (c.charCodeAt(0) <= 0x1f) out += `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
    else out += c;
  }
  return out;
}

/** format_json_value: a value (text) printed as its field's type says. */
function jsonValue(type, value) {
  if (type === 'STRING') return `"${escapeJson(value)}"`;
  if (type === 'BOOL') return value === '0' ? 'false' : 'true';
  return value;
}

const valuesOf = (fields, record) =>
  fields.map(([name, type]) => [name, jsonValue(type, record[name] ?? FILLER[type])]);

/** json_printer: `[`, each test's fields then samples_ns and samples_ts, `]`. */
export function renderJson(fields, records) {
  const tests = records.map(
    (r) =>
      `  {\n${valuesOf(fields, r)
        .map(([n, v]) => `    "${n}": ${v},\n`)
        .join(
          '',
        )}    "samples_ns": [ ${r.samples_ns.join(', ')} ],\n    "samples_ts": [ ${r.samples_ts.join(', ')} ]\n  }`,
  );
  return `[\n${tests.join(',\n')}\n]\n`;
}

/** jsonl_printer: one line per test. */
export function renderJsonl(fields, records) {
  return records
    .map(
      (r) =>
        `{${valuesOf(fields, r)
          .map(([n, v]) => `"${n}": ${v}, `)
          .join('')}"samples_ns": [ ${r.samples_ns.join(', ')} ],"samples_ts": [ ${r.samples_ts.join(', ')} ]}\n`,
    )
    .join('');
}

/** The release a tarball names: llama/llama.cpp.info.json's `tag` (3.x), or llama/binariesGithubRelease.json's `release`. */
function releaseOf(work) {
  for (const [file, key] of [
    ['llama.cpp.info.json', 'tag'],
    ['binariesGithubRelease.json', 'release'],
  ]) {
    try {
      return JSON.parse(readFileSync(path.join(work, 'package', 'llama', file), 'utf8'))[key];
    } catch (err) {
      if (err.code !== 'ENOENT') throw err;
    }
  }
  throw new Error('the tarball names no llama.cpp release');
}

/** llama-bench.cpp of a source's release, read out of its tarball's bundle: the text and where it came from. */
export async function sourceOf(src) {
  const tgz = await fetchTarball(src.package, src.integrity);
  const work = mkdtempSync(path.join(tmpdir(), 'mcs-bench-eras-'));
  try {
    const members = ['package/llama/gitRelease.bundle', 'package/llama/llama.cpp.info.json'];
    const names = (await run('tar', ['-tzf', tgz], { maxBuffer: 64 << 20 })).stdout.split('\n');
    const wanted = [...members, 'package/llama/binariesGithubRelease.json'].filter((m) => names.includes(m));
    await run('tar', ['-xzf', tgz, '-C', work, ...wanted]);
    const release = releaseOf(work);
    const repo = path.join(work, 'repo.git');
    await run('git', ['clone', '--quiet', '--bare', path.join(work, members[0]), repo]);
    const { stdout: commit } = await run('git', ['-C', repo, 'rev-parse', 'HEAD']);
    for (const file of SOURCE_PATHS) {
      try {
        const { stdout } = await run('git', ['-C', repo, 'show', `HEAD:${file}`], { maxBuffer: 16 << 20 });
        return { release, commit: commit.trim(), file, text: stdout };
      } catch {
        // Not at this path in this release: try the next.
      }
    }
    throw new Error(`${src.package} (llama.cpp ${release}) has no ${SOURCE_PATHS.join(' or ')}`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** The fixture of one source, derived from its llama-bench.cpp. */
export async function sourceFixture(src) {
  const found = await sourceOf(src);
  const { fields, formats } = benchShape(found.text, found.file);
  return {
    generatedBy: 'scripts/build/llama-bench-eras.mjs (do not edit: run it)',
    source: { ...src, release: found.release, commit: found.commit, file: found.file },
    fields: Object.fromEntries(fields),
    json: renderJson(fields, SAMPLE_RECORDS),
    jsonl: formats.includes('jsonl') ? renderJsonl(fields, SAMPLE_RECORDS) : null,
  };
}

export const fixtureFile = (src) => path.join(fixturesDir, `${src.id}.json`);
const serialize = (fixture) => `${JSON.stringify(fixture, null, 2)}\n`;

async function main(check) {
  mkdirSync(fixturesDir, { recursive: true });
  const stale = [];
  for (const src of SOURCES) {
    const text = serialize(await sourceFixture(src));
    const file = fixtureFile(src);
    if (check) {
      let had = null;
      try {
        had = readFileSync(file, 'utf8');
      } catch {}
      if (had !== text) stale.push(path.relative(repoRoot, file));
    } else {
      writeFileSync(file, text);
      process.stderr.write(`llama-bench-eras: ${path.relative(repoRoot, file)}\n`);
    }
  }
  if (stale.length > 0) {
    process.stderr.write(
      `llama-bench-eras: stale (run node scripts/build/llama-bench-eras.mjs): ${stale.join(', ')}\n`,
    );
    process.exit(1);
  }
}

if (process.argv[1] === self) {
  main(process.argv.includes('--check')).catch((err) => {
    process.stderr.write(`llama-bench-eras: ${err.message}\n`);
    process.exit(1);
  });
}
