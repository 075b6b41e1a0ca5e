import type { Era } from '../../test/conformance/eras.mjs';

/** The cached tools (llama-tools.mjs): both programs, the release's vocab-only GGUF, and where they come from. */
export interface LlamaTools {
  bench: string;
  perplexity: string;
  vocab: string;
  /** The llama.cpp release tag the tarball names (llama/llama.cpp.info.json). */
  release: string;
  commit: string;
  dir: string;
}
export const TOOLS_ERA: Era;
/** The tools cannot be had here: no CMake, Ninja, clang-19 or git, or no tarball (its message says which). */
export class ToolsUnavailable extends Error {}
export function toolsCacheRoot(env?: NodeJS.ProcessEnv): string;
export function llamaTools(options?: { env?: NodeJS.ProcessEnv }): Promise<LlamaTools>;
export function llamaToolsPrerequisites(): Promise<void>;
/** What a cold build costs, as measured (llama-tools.mjs). */
export const TOOLS_COST: Readonly<{ minutes: string; tarballMB: number; tempMB: number; keptMB: number }>;
/** The build's steps, in order. */
export const TOOLS_STEPS: readonly ['fetch', 'extract', 'configure', 'build', 'install'];
/** The build step's status line: ninja's counts, the step's time and the time left at its rate. */
export function buildStatus(status: { done: number; total: number }, stepMs: number): string;
/** The cached tools, or null when they would have to be built. */
export function cachedLlamaTools(options?: { env?: NodeJS.ProcessEnv }): LlamaTools | null;
/** This machine's cache key: the recipe's data and the compilers' versions. */
export function toolsCacheKey(): string;
/** A reporter of ninja's status lines (llama-tools.mjs): in place on a terminal, else one every 15 s and the last. */
export function buildReporter(options: { tty: boolean; write?: (text: string) => void; now?: () => number }): {
  line(text: string): void;
  end(): void;
};
