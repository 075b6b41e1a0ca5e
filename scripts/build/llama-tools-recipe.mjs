// What determines the llama.cpp tools' binaries (llama-tools.mjs), and nothing else: the release's tarball, the
// compilers, CMake's generator and cache entries, the targets and the vocab file taken beside them. The cache key
// hashes this data (as JSON, so a comment here changes nothing) with the compilers' `--version`, so editing how the
// build reports progress or cleans up finds the same cache, while a change to the recipe builds again.
import { createHash } from 'node:crypto';
import { ERAS } from '../../test/conformance/eras.mjs';

/** The era the tools come from: the newest. */
export const TOOLS_ERA = ERAS[ERAS.length - 1];

// clang-19, as the conformance build uses.
const CC = 'clang-19';
const CXX = 'clang++-19';

/** The recipe, frozen: every field shapes the binaries or the files installed beside them. */
export const RECIPE = Object.freeze({
  package: TOOLS_ERA.package,
  integrity: TOOLS_ERA.integrity,
  release: TOOLS_ERA.id,
  // The vocab-only GGUF taken from the release: SentencePiece (llama), 32000 tokens, 0.7 MB.
  vocab: 'models/ggml-vocab-llama-spm.gguf',
  cc: CC,
  cxx: CXX,
  generator: 'Ninja',
  // CPU only, static, and nothing but what the two programs link.
  cmake: Object.freeze([
    '-DCMAKE_BUILD_TYPE=Release',
    `-DCMAKE_C_COMPILER=${CC}`,
    `-DCMAKE_CXX_COMPILER=${CXX}`,
    '-DBUILD_SHARED_LIBS=OFF',
    '-DGGML_METAL=OFF',
    '-DGGML_NATIVE=OFF',
    '-DGGML_OPENMP=OFF',
    '-DGGML_CCACHE=OFF',
    '-DGGML_BLAS=OFF',
    // Deprecated in this release (a no-op, kept so an older release would not try to find libcurl).
    '-DLLAMA_CURL=OFF',
    '-DLLAMA_OPENSSL=OFF',
    '-DLLAMA_BUILD_TESTS=OFF',
    '-DLLAMA_BUILD_EXAMPLES=OFF',
    '-DLLAMA_BUILD_SERVER=OFF',
    '-DLLAMA_BUILD_APP=OFF',
    '-DLLAMA_BUILD_UI=OFF',
    '-DLLAMA_TOOLS_INSTALL=OFF',
  ]),
  targets: Object.freeze(['llama-bench', 'llama-perplexity']),
});

/** The cache key of `recipe` built with `compilers` (their `--version` output): 16 hex digits. */
export function recipeKey(compilers, recipe = RECIPE) {
  return createHash('sha256')
    .update(`${JSON.stringify(recipe)}\0${compilers}`)
    .digest('hex')
    .slice(0, 16);
}
