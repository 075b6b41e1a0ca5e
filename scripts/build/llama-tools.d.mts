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
