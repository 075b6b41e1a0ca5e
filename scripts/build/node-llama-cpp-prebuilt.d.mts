import type { Era } from '../../test/conformance/eras.mjs';

/** The cached project (node-llama-cpp-prebuilt.mjs): node-llama-cpp and its Linux x64 CPU prebuilt installed in `dir`. */
export interface NodeLlamaCppProject {
  dir: string;
  /** The release's vocab-only GGUF (models/ggml-vocab-llama-spm.gguf), for tiny-gguf.mjs. */
  vocab: string;
  /** node-llama-cpp's version. */
  version: string;
  /** The llama.cpp release it bundles. */
  release: string;
}
export const NODE_LLAMA_CPP: Era;
export const PREBUILT: Readonly<{ package: string; integrity: string }>;
/** The project cannot be had here: not Linux x64, no npm or git, or a tarball npm cannot fetch. */
export class PrebuiltUnavailable extends Error {}
export function prebuiltCacheRoot(env?: NodeJS.ProcessEnv): string;
export function nodeLlamaCppProject(options?: { env?: NodeJS.ProcessEnv }): Promise<NodeLlamaCppProject>;
/** What a first install costs, as measured (node-llama-cpp-prebuilt.mjs). */
export const PREBUILT_COST: Readonly<{ seconds: string; tarballsMB: number; keptMB: number }>;
