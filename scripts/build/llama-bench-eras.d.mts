/** A release a llama-bench fixture is derived from: a node-llama-cpp tarball, pinned by integrity. */
export interface BenchSource {
  id: string;
  package: string;
  integrity: string;
}
export type FieldType = 'STRING' | 'BOOL' | 'INT' | 'FLOAT';
/** One release's llama-bench shape and its output of SAMPLE_RECORDS (llama-bench-eras.mjs). */
export interface BenchFixture {
  generatedBy: string;
  source: BenchSource & { release: string; commit: string; file: string };
  fields: Record<string, FieldType>;
  json: string;
  jsonl: string | null;
}
export const fixturesDir: string;
export const PRINTERS: Readonly<Record<string, readonly ('json' | 'jsonl')[]>>;
export const OLDER_SOURCES: readonly BenchSource[];
export const SOURCES: readonly BenchSource[];
export const SAMPLE_RECORDS: readonly Record<string, string | string[]>[];
export function benchShape(
  source: string,
  file?: string,
): { fields: [string, FieldType][]; formats: readonly ('json' | 'jsonl')[] };
export function renderJson(fields: [string, FieldType][], records: readonly Record<string, unknown>[]): string;
export function renderJsonl(fields: [string, FieldType][], records: readonly Record<string, unknown>[]): string;
export function sourceOf(src: BenchSource): Promise<{ release: string; commit: string; file: string; text: string }>;
export function sourceFixture(src: BenchSource): Promise<BenchFixture>;
export function fixtureFile(src: BenchSource): string;
