// llama-bench's command line and records (lib/bench/llama-bench.ts): the output option bench adds or refuses, and
// records of each era's shape read into one.
import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import {
  fileName,
  KEY_PROPERTIES,
  parseLlamaBench,
  testName,
  withReadableOutput,
} from '../../lib/bench/llama-bench.js';
import { fixturesDir, SOURCES } from '../../scripts/build/llama-bench-eras.mjs';
import { caught, root } from '../support/helpers.js';

describe('the output option', () => {
  it('adds -o json when none is given, keeps json and jsonl as given', () => {
    expect(withReadableOutput(['-m', 'x.gguf'])).toEqual({ args: ['-m', 'x.gguf', '-o', 'json'], format: 'json' });
    expect(withReadableOutput(['-o', 'jsonl', '-m', 'x'])).toEqual({
      args: ['-o', 'jsonl', '-m', 'x'],
      format: 'jsonl',
    });
    expect(withReadableOutput(['--output', 'json'])).toEqual({ args: ['--output', 'json'], format: 'json' });
    expect(withReadableOutput(['--output=jsonl'])).toEqual({ args: ['--output=jsonl'], format: 'jsonl' });
    // The last one given is the one llama-bench uses.
    expect(withReadableOutput(['-o', 'md', '-o', 'json'])).toEqual({
      args: ['-o', 'md', '-o', 'json'],
      format: 'json',
    });
  });

  it('refuses a format it cannot read, and an option without its value, saying what to do', () => {
    const refused = (f: string) => ({
      name: 'UsageError',
      code: 'ERR_USAGE',
      message: `bench reads llama-bench's json or jsonl output, not ${f}: drop the output option (bench adds -o json) or give -o json`,
    });
    expect(caught(() => withReadableOutput(['-o', 'md']))).toEqual(refused("'md'"));
    expect(caught(() => withReadableOutput(['--output=csv']))).toEqual(refused("'csv'"));
    expect(caught(() => withReadableOutput(['-o', 'sql']))).toEqual(refused("'sql'"));
    expect(caught(() => withReadableOutput(['-o', 'yaml']))).toEqual(refused("'yaml' (not a format)"));
    expect(caught(() => withReadableOutput(['-m', 'x', '-o']))).toEqual({
      name: 'UsageError',
      code: 'ERR_USAGE',
      message: "llama-bench's -o needs a format (json or jsonl for bench)",
    });
  });
});

describe('test names, as llama-bench prints them', () => {
  it.each([
    [512, 0, 0, 'pp512'],
    [0, 128, 0, 'tg128'],
    [512, 128, 0, 'pp512+tg128'],
    [512, 0, 4096, 'pp512 @ d4096'],
    [0, 0, 0, 'pp0'],
  ])('n_prompt %i, n_gen %i, n_depth %i: %s', (p, g, d, name) => {
    expect(testName(p, g, d)).toBe(name);
  });
});

describe('records of each era', () => {
  it('current: backends as one string, n_depth, build number and commit', () => {
    const text = JSON.stringify([
      {
        build_commit: '3f9da22',
        build_number: 7010,
        backends: 'Metal,BLAS',
        model_filename: 'models/m.gguf',
        model_type: 'llama 8B Q4_K - Medium',
        n_prompt: 512,
        n_gen: 0,
        n_depth: 0,
        avg_ts: 1234.5,
        stddev_ts: 3.25,
        samples_ts: [1230, 1239],
      },
      { build_number: 7010, n_prompt: 0, n_gen: 128, n_depth: 0, avg_ts: 55.5, stddev_ts: 0.5 },
    ]);
    expect(parseLlamaBench(text, 'json')).toEqual([
      {
        test: 'pp512',
        nPrompt: 512,
        nGen: 0,
        nDepth: 0,
        avgTs: 1234.5,
        stddevTs: 3.25,
        model: 'm.gguf',
        modelType: 'llama 8B Q4_K - Medium',
        key: { model_filename: 'm.gguf', model_type: 'llama 8B Q4_K - Medium', n_prompt: 512, n_gen: 0, n_depth: 0 },
        build: 'b7010 (3f9da22)',
        backend: 'Metal,BLAS',
      },
      {
        test: 'tg128',
        nPrompt: 0,
        nGen: 128,
        nDepth: 0,
        avgTs: 55.5,
        stddevTs: 0.5,
        model: null,
        modelType: null,
        key: { n_prompt: 0, n_gen: 128, n_depth: 0 },
        build: 'b7010',
        backend: null,
      },
    ]);
  });

  it("a model's file name without its folders: after the last /, or after the last backslash in a path without /", () => {
    expect(['/Users/me/1B\\Q4.gguf', 'C:\\m\\x.gguf', 'x.gguf', 'dir/', null].map(fileName)).toEqual([
      '1B\\Q4.gguf',
      'x.gguf',
      'x.gguf',
      'dir/',
      null,
    ]);
  });

  it('the key holds every key property the record has, in any order, and nothing else', () => {
    const record = {
      avg_ts: 1,
      n_threads: 4,
      flash_attn: true,
      n_prompt: 512,
      n_gen: 0,
      gpu_info: 'Apple M1',
      backends: 'Metal',
      build_commit: 'x',
      test_time: 't',
    };
    expect(parseLlamaBench(JSON.stringify([record]), 'json')[0]!.key).toEqual({
      n_threads: 4,
      flash_attn: true,
      n_prompt: 512,
      n_gen: 0,
    });
  });

  it('JSON lines with blank lines (spaces, a CR) between records; a field of the wrong type is read as absent', () => {
    const lines = [
      { build_commit: 'a1b2c3d', metal: true, cuda: false, n_prompt: 512, n_gen: 0, avg_ts: 100 },
      { build_commit: 'a1b2c3d', backends: '', n_prompt: 0, n_gen: 128, n_depth: 'x', avg_ts: 10, stddev_ts: 'x' },
    ]
      .map((r) => JSON.stringify(r))
      .join('\n  \r\n');
    expect(
      parseLlamaBench(`${lines}\n\n`, 'jsonl').map((r) => [r.test, r.build, r.backend, r.nDepth, r.stddevTs]),
    ).toEqual([
      ['pp512', 'a1b2c3d', 'Metal', 0, null],
      ['tg128', 'a1b2c3d', null, 0, null],
    ]);
  });

  it('output that is no result is an error, never an empty table', () => {
    const bad = (message: string) => ({ name: 'BenchError', code: 'ERR_BENCH_OUTPUT', message });
    // The parser's own words follow in parentheses; they differ between Node releases.
    for (const [text, format, what] of [
      ['', 'json', 'a JSON array'],
      ['[{"n_prompt": 1,', 'json', 'a JSON array'],
      ['{"n_prompt": 1}\n{bad', 'jsonl', 'JSON lines'],
    ] as const) {
      const e = caught(() => parseLlamaBench(text, format));
      expect([e.name, e.code, e.message.startsWith(`llama-bench's output is not ${what} (`)]).toEqual([
        'BenchError',
        'ERR_BENCH_OUTPUT',
        true,
      ]);
    }
    expect(caught(() => parseLlamaBench('[]', 'json'))).toEqual(bad('llama-bench printed no test'));
    expect(caught(() => parseLlamaBench('{"avg_ts": 1}', 'json'))).toEqual(
      bad("llama-bench's output is not a JSON array (not an array)"),
    );
    expect(caught(() => parseLlamaBench('[1]', 'json'))).toEqual(bad('llama-bench record 0 is not an object'));
    const lacking = bad(
      'llama-bench record 0 lacks n_prompt, n_gen or avg_ts as llama-bench writes them (numbers ≥ 0)',
    );
    expect(caught(() => parseLlamaBench('[{"n_prompt": 1, "n_gen": 0}]', 'json'))).toEqual(lacking);
    expect(caught(() => parseLlamaBench('[{"n_prompt": 1, "avg_ts": 1}]', 'json'))).toEqual(lacking);
    expect(caught(() => parseLlamaBench('[{"n_gen": 1, "avg_ts": 1}]', 'json'))).toEqual(lacking);
    expect(caught(() => parseLlamaBench('[{"n_prompt": -1, "n_gen": 0, "avg_ts": 1}]', 'json'))).toEqual(lacking);
    expect(caught(() => parseLlamaBench('[{"n_prompt": 1, "n_gen": 0, "avg_ts": -1}]', 'json'))).toEqual(lacking);
    expect(caught(() => parseLlamaBench('[{"n_prompt": 1.5, "n_gen": 0, "avg_ts": 1}]', 'json'))).toEqual(lacking);
    expect(parseLlamaBench('[{"n_prompt": 1, "n_gen": 0, "avg_ts": 0}]', 'json')[0]!.avgTs).toBe(0);
  });
});

/** A release's llama-bench shape (scripts/build/llama-bench-eras.mjs), derived from its llama-bench.cpp. */
interface EraFixture {
  source: { id: string; package: string; release: string; commit: string; file: string };
  fields: Record<string, 'STRING' | 'BOOL' | 'INT' | 'FLOAT'>;
  json: string;
  jsonl: string | null;
}

const eraFixtures: EraFixture[] = readdirSync(fixturesDir)
  .sort()
  .map((f) => JSON.parse(readFileSync(path.join(fixturesDir, f), 'utf8')));

/** What every release's output of the same two tests (SAMPLE_RECORDS, on a Mac) reads as. */
const SAME_TWO_TESTS = [
  {
    test: 'pp512',
    nPrompt: 512,
    nGen: 0,
    nDepth: 0,
    avgTs: 4620.810059,
    stddevTs: 14.7427,
    model: 'llama "3.2" 1B\\Q4_K_M.gguf',
    modelType: 'llama 1B Q4_K - Medium',
    build: 'b7010 (1a2b3c4)',
    backend: 'Metal,BLAS',
  },
  {
    test: 'tg128',
    nPrompt: 0,
    nGen: 128,
    nDepth: 0,
    avgTs: 95.000002,
    stddevTs: 0.149571,
    model: 'llama "3.2" 1B\\Q4_K_M.gguf',
    modelType: 'llama 1B Q4_K - Medium',
    build: 'b7010 (1a2b3c4)',
    backend: 'Metal,BLAS',
  },
];

describe("each release's own shape, derived from its llama-bench.cpp (test/fixtures/bench/llama-bench-eras/)", () => {
  it('there is one fixture per release the repository fetches: every conformance era and the older ones', () => {
    expect(eraFixtures.map((f) => f.source.id).sort()).toEqual(SOURCES.map((s) => s.id).sort());
  });

  it.each(eraFixtures.map((f) => [`${f.source.release} (${f.source.package}, ${f.source.file})`, f] as const))(
    '%s: json and jsonl read to the same records as every other release, each keyed by what that release prints',
    (_, fixture) => {
      // The key is every key property the release's llama-bench prints (its own fields), the model without folders.
      const printed = KEY_PROPERTIES.filter((p) => Object.hasOwn(fixture.fields, p));
      for (const format of ['json', 'jsonl'] as const) {
        const text = format === 'json' ? fixture.json : fixture.jsonl;
        if (text === null) continue;
        const records = parseLlamaBench(text, format);
        expect(records.map(({ key, ...rest }) => rest)).toEqual(SAME_TWO_TESTS);
        expect(records.map((r) => Object.keys(r.key))).toEqual([printed, printed]);
        expect(records.map((r) => r.key.model_filename)).toEqual(SAME_TWO_TESTS.map((t) => t.model));
      }
    },
  );

  it('the shapes differ where llama-bench changed: the backend booleans, n_depth, JSON lines, flash_attn a number', () => {
    const byRelease = new Map(eraFixtures.map((f) => [f.source.release, f]));
    const shape = (release: string) => {
      const f = byRelease.get(release)!;
      return [
        'metal' in f.fields,
        'backends' in f.fields,
        'n_depth' in f.fields,
        f.jsonl !== null,
        f.fields.flash_attn,
      ];
    };
    expect(['b3658', 'b4753', 'b6673', 'b10361', 'v0.5.0'].map(shape)).toEqual([
      [true, false, false, false, 'BOOL'],
      [false, true, false, true, 'BOOL'],
      [false, true, true, true, 'BOOL'],
      [false, true, true, true, 'INT'],
      [false, true, true, true, 'INT'],
    ]);
  });

  it("the newest release's derived shape is what its real llama-bench printed: the same fields, in order, of the same types", () => {
    const real = JSON.parse(readFileSync(path.join(root, 'test', 'fixtures', 'bench', 'llama-bench.json'), 'utf8'));
    const derived = eraFixtures.find((f) => f.source.release === 'v0.5.0')!;
    const jsonType = (v: unknown) =>
      typeof v === 'string'
        ? 'STRING'
        : typeof v === 'boolean'
          ? 'BOOL'
          : Number.isInteger(v)
            ? 'INT'
            : typeof v === 'number'
              ? 'FLOAT'
              : 'other';
    for (const record of real as Record<string, unknown>[]) {
      const { samples_ns, samples_ts, ...fields } = record;
      expect([Array.isArray(samples_ns), Array.isArray(samples_ts)]).toEqual([true, true]);
      // A FLOAT that happens to be whole prints without a fraction: read it as FLOAT when the source says so.
      expect(
        Object.entries(fields).map(([k, v]) => [
          k,
          derived.fields[k] === 'FLOAT' && jsonType(v) === 'INT' ? 'FLOAT' : jsonType(v),
        ]),
      ).toEqual(Object.entries(derived.fields));
    }
  });
});
