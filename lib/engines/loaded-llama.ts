/**
 * Which llama.cpp this process has loaded, and so which rule set describes it: the consumer scan's ggml-metal
 * images (native), ggml_version() of their ggml, the generation markers they export, and node-llama-cpp's
 * `_nlcBuildMetadata.json` next to its binaries.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import path from 'node:path';
import { LLAMA_CPP_GENERATION_MARKERS, parseRelease, rulesOfLoaded, type LlamaCppRuleSet } from './index.js';
import type { NativeBinding } from '../../types/binding.js';

/** A ggml-metal loaded in this process, with the llama.cpp rules that describe it. */
export interface LoadedLlamaCpp {
  /** Path of the image that holds ggml-metal (node-llama-cpp: its libggml-metal.so). */
  image: string;
  /** ggml_version() of the loaded ggml; null when it has none (ggml before 0.9, 2025). */
  ggmlVersion: string | null;
  /** The llama.cpp release: node-llama-cpp's `_nlcBuildMetadata.json` next to the image; null without one. */
  release: string | null;
  /** The rule set that describes it. */
  rules: LlamaCppRuleSet;
  /** One line: what was found and what decided the rules. */
  detail: string;
}

/** The text of `file`; throws when it cannot be read or is larger than node-llama-cpp's few hundred bytes could be. */
function readSmallFile(file: string): string {
  const maxBytes = 64 * 1024;
  const fd = openSync(file, 'r');
  try {
    const size = fstatSync(fd).size;
    if (size > maxBytes) throw new Error(`${file} is larger than ${maxBytes} bytes`);
    const buffer = Buffer.alloc(size);
    const read = readSync(fd, buffer, 0, size, 0);
    return buffer.subarray(0, read).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/** The llama.cpp release node-llama-cpp recorded for the binaries in `dir` (`buildOptions.llamaCpp.release`), if any. */
export function nodeLlamaCppRelease(dir: string): string | null {
  try {
    // No file, a file too large, not JSON, or a level missing (JSON null included): each throws, and it is null.
    const metadata = JSON.parse(readSmallFile(path.join(dir, '_nlcBuildMetadata.json'))) as {
      buildOptions: { llamaCpp: { release: unknown } };
    };
    const release = metadata.buildOptions.llamaCpp.release;
    return typeof release === 'string' && parseRelease(release) !== null ? release : null;
  } catch {
    return null;
  }
}

/** Every ggml-metal loaded in this process, with its release and rules (empty without the native module's scan). */
export function loadedLlamaCpp(binding: NativeBinding): LoadedLlamaCpp[] {
  const images = binding.ggmlMetalImages(LLAMA_CPP_GENERATION_MARKERS.flatMap((m) => m.symbols));
  return images.map((found) => {
    const release = nodeLlamaCppRelease(path.dirname(found.image));
    const rules = rulesOfLoaded({
      image: found.image,
      ggmlVersion: found.ggmlVersion,
      markers: found.markers,
      nodeLlamaCppRelease: release,
    });
    return { image: found.image, ggmlVersion: found.ggmlVersion, release, rules: rules.ruleSet, detail: rules.detail };
  });
}
