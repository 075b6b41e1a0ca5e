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
  model: string | null;
  modelType: string | null;
  /** `b6673 (abc1234)`, or what of it the record has. */
  build: string | null;
  backend: string | null;
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
  // A build made outside llama.cpp's own release tree (a tagged package release) has build number 0.
  const n = count(r.build_number) || null;
  const commit = str(r.build_commit);
  if (n !== null && commit !== null) return `b${n} (${commit})`;
  return n !== null ? `b${n}` : commit;
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
  return {
    test: testName(nPrompt, nGen, nDepth),
    nPrompt,
    nGen,
    nDepth,
    avgTs,
    stddevTs: num(value.stddev_ts),
    model: str(value.model_filename),
    modelType: str(value.model_type),
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
