/**
 * llama-bench's command line and output, as `bench` needs them: which output format the user asked for (JSON is added
 * when none was), and its records read into one shape across releases.
 *
 * llama-bench prints one record per test (`test::get_fields()` in tools/llama-bench/llama-bench.cpp): `n_prompt`,
 * `n_gen` (and, from late 2025, `n_depth`) say which test, `avg_ts` / `stddev_ts` / `samples_ts` its tokens per second,
 * and `model_type`, `model_filename`, `build_commit`, `build_number` and the backend what ran. The backend is one
 * string `backends` from late 2024 (b4753 has it); older releases (b3658) had a boolean per backend (`cuda`, `metal`,
 * `blas`, …). test/fixtures/bench/llama-bench-eras/ holds each release's shape, derived from its llama-bench.cpp.
 */
import { BenchError, UsageError } from '../core/errors.js';
import { clip, isObject } from '../core/input.js';
import { llamaCppReleaseName } from '../engines/llama-cpp-releases.js';

/** One llama-bench test as `bench` reads it. */
export interface BenchRecord {
  /** llama-bench's own name for the test: `pp512`, `tg128`, `pp512+tg128`, with ` @ d4096` for a depth. */
  test: string;
  nPrompt: number;
  nGen: number;
  nDepth: number;
  /** Tokens per second, llama-bench's mean over its repetitions. */
  avgTs: number;
  stddevTs: number | null;
  /** The model's file name, without its folders. */
  model: string | null;
  modelType: string | null;
  /**
   * What identifies the test among the run's records: every KEY_PROPERTIES field the record has, as llama-bench
   * printed it. Two records are the same test, in any run, exactly when their keys are equal.
   */
  key: Record<string, unknown>;
  /** `b6673 (abc1234)`, or what of it the record has. */
  build: string | null;
  backend: string | null;
}

/**
 * The properties by which llama.cpp's own scripts/compare-llama-bench.py tells one llama-bench test from another
 * (LLAMA_BENCH_KEY_PROPERTIES at v0.5.0, de3ff81; older releases print a subset, newer may add some): the model and
 * every setting llama-bench can sweep. Left out are the three that describe the machine and the build (`cpu_info`,
 * `gpu_info`, `backends`): the script compares builds on one machine, bench compares sides of one build on one
 * machine, and a profile that renames the device changes `gpu_info` between the sides of one test.
 */
export const KEY_PROPERTIES = [
  'model_filename',
  'model_type',
  'n_gpu_layers',
  'n_cpu_moe',
  'tensor_buft_overrides',
  'n_batch',
  'n_ubatch',
  'embeddings',
  'cpu_mask',
  'cpu_strict',
  'poll',
  'n_threads',
  'type_k',
  'type_v',
  'load_mode',
  'use_mmap',
  'no_kv_offload',
  'split_mode',
  'main_gpu',
  'tensor_split',
  'flash_attn',
  'n_prompt',
  'n_gen',
  'n_depth',
  'fit_target',
  'fit_min_ctx',
] as const;

/** The short names llama-bench's own Markdown table gives the properties a sweep varies most. */
const SHORT_NAMES: Readonly<Record<string, string>> = {
  model_filename: 'model',
  model_type: 'type',
  n_gpu_layers: 'ngl',
  n_batch: 'b',
  n_ubatch: 'ub',
  n_threads: 't',
  type_k: 'ctk',
  type_v: 'ctv',
  flash_attn: 'fa',
  use_mmap: 'mmap',
  no_kv_offload: 'nkvo',
  split_mode: 'sm',
  main_gpu: 'mg',
  embeddings: 'embd',
};

/** A property's name as a row label shows it. */
export function shortName(property: string): string {
  return Object.hasOwn(SHORT_NAMES, property) ? SHORT_NAMES[property]! : property;
}

/** The output formats llama-bench has (`-o`, `--output`), and the ones `bench` reads. */
const FORMATS = ['csv', 'json', 'jsonl', 'md', 'sql'] as const;
const READABLE = ['json', 'jsonl'] as const;
export type ReadableFormat = (typeof READABLE)[number];

/**
 * Backends older releases named by one boolean field each, with the name llama-bench gave each backend (its
 * get_backend()), which is the name the `backends` string uses since: Metal with Accelerate reads `Metal,BLAS` from
 * either shape. (`rpc` was a string of servers there, not a backend flag.)
 */
const LEGACY_BACKENDS = [
  ['cuda', 'CUDA'],
  ['vulkan', 'Vulkan'],
  ['kompute', 'Kompute'],
  ['metal', 'Metal'],
  ['sycl', 'SYCL'],
  ['gpu_blas', 'GPU BLAS'],
  ['blas', 'BLAS'],
] as const;

/**
 * The arguments to run: the user's, with `-o json` added when they gave no output format. A format `bench` cannot
 * read (csv, md, sql) is a UsageError naming the ones it can; so is `-o` without a value.
 */
export function withReadableOutput(args: readonly string[]): { args: string[]; format: ReadableFormat } {
  let format: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '-o' || a === '--output') {
      if (i + 1 >= args.length) throw new UsageError(`llama-bench's ${a} needs a format (json or jsonl for bench)`);
      format = args[++i];
    } else if (a.startsWith('--output=')) format = a.slice('--output='.length);
  }
  if (format === undefined) return { args: [...args, '-o', 'json'], format: 'json' };
  if ((READABLE as readonly string[]).includes(format)) return { args: [...args], format: format as ReadableFormat };
  const known = (FORMATS as readonly string[]).includes(format) ? `'${format}'` : `'${clip(format)}' (not a format)`;
  throw new UsageError(
    `bench reads llama-bench's json or jsonl output, not ${known}: drop the output option (bench adds -o json) or give -o json`,
  );
}

/**
 * The last part of a path: after the last `/`, or, in a path with no `/` (one llama-bench printed on Windows,
 * `C:\\m\\x.gguf`), after the last backslash, which on macOS and Linux is a character a file name may hold.
 */
export function fileName(file: string | null): string | null {
  if (file === null) return null;
  const last = file.split(file.includes('/') ? '/' : '\\').at(-1)!;
  return last === '' ? file : last;
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const count = (v: unknown): number | null => (Number.isSafeInteger(v) && (v as number) >= 0 ? (v as number) : null);
const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

/** llama-bench's name for a test, as its Markdown table prints it. */
export function testName(nPrompt: number, nGen: number, nDepth: number): string {
  const parts = [nPrompt > 0 ? `pp${nPrompt}` : null, nGen > 0 ? `tg${nGen}` : null].filter(Boolean);
  const name = parts.length > 0 ? parts.join('+') : 'pp0';
  return nDepth > 0 ? `${name} @ d${nDepth}` : name;
}

function backendOf(r: Record<string, unknown>): string | null {
  const named = str(r.backends) ?? str(r.backend);
  if (named !== null) return named;
  const legacy = LEGACY_BACKENDS.filter(([field]) => r[field] === true).map(([, name]) => name);
  return legacy.length > 0 ? legacy.join(',') : null;
}

function buildOf(r: Record<string, unknown>): string | null {
  // A tagged release's own build has build number 0: its name then comes from its commit, where that is known.
  return llamaCppReleaseName({ build: count(r.build_number), commit: str(r.build_commit) });
}

/** One record, or why it is not one. */
function recordOf(value: unknown, where: string): BenchRecord {
  if (!isObject(value)) throw new BenchError('ERR_BENCH_OUTPUT', `${where} is not an object`);
  const nPrompt = count(value.n_prompt);
  const nGen = count(value.n_gen);
  const avgTs = num(value.avg_ts);
  if (nPrompt === null || nGen === null || avgTs === null || avgTs < 0) {
    throw new BenchError(
      'ERR_BENCH_OUTPUT',
      `${where} lacks n_prompt, n_gen or avg_ts as llama-bench writes them (numbers ≥ 0)`,
    );
  }
  const nDepth = count(value.n_depth) ?? 0;
  // The folders are where the model lies on this machine, not which model it is (and a report travels).
  const model = fileName(str(value.model_filename));
  const key: Record<string, unknown> = {};
  for (const p of KEY_PROPERTIES) if (Object.hasOwn(value, p)) key[p] = p === 'model_filename' ? model : value[p];
  return {
    test: testName(nPrompt, nGen, nDepth),
    nPrompt,
    nGen,
    nDepth,
    avgTs,
    stddevTs: num(value.stddev_ts),
    model,
    modelType: str(value.model_type),
    key,
    build: buildOf(value),
    backend: backendOf(value),
  };
}

/**
 * llama-bench's stdout in `format` as the values it printed, one per test. Throws BenchError ERR_BENCH_OUTPUT when
 * the text is not that format or holds no record: a run that printed nothing is never a result. Linear in the text.
 */
export function llamaBenchValues(text: string, format: ReadableFormat): unknown[] {
  let values: unknown[];
  try {
    if (format === 'json') {
      const parsed: unknown = JSON.parse(text);
      if (!Array.isArray(parsed)) throw new Error('not an array');
      values = parsed;
    } else {
      values = text
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as unknown);
    }
  } catch (e) {
    throw new BenchError(
      'ERR_BENCH_OUTPUT',
      `llama-bench's output is not ${format === 'json' ? 'a JSON array' : 'JSON lines'} (${(e as Error).message})`,
    );
  }
  if (values.length === 0) throw new BenchError('ERR_BENCH_OUTPUT', 'llama-bench printed no test');
  return values;
}

/** The records of llamaBenchValues' values; throws BenchError ERR_BENCH_OUTPUT naming a record that is not one. */
export function benchRecords(values: readonly unknown[]): BenchRecord[] {
  return values.map((v, i) => recordOf(v, `llama-bench record ${i}`));
}

/** llama-bench's records from its stdout in `format` (llamaBenchValues, then benchRecords). */
export function parseLlamaBench(text: string, format: ReadableFormat): BenchRecord[] {
  return benchRecords(llamaBenchValues(text, format));
}
