/** The tiny llama's shape (tiny-gguf.mjs). */
export const TINY_SHAPE: Readonly<{
  nLayer: number;
  nEmbd: number;
  nHead: number;
  nHeadKv: number;
  nFf: number;
  nCtx: number;
  rmsEps: number;
}>;
/** A vocab-only GGUF's tokenizer.ggml.* entries (raw bytes) and its token count. */
export interface Vocab {
  entries: { key: string; raw: Buffer }[];
  nVocab: number;
}
export function readVocab(file: string): Vocab;
export function tinyModelBytes(options: { seed?: number; vocab: Vocab }): Buffer;
export function writeTinyModel(
  file: string,
  options: { seed?: number; vocab: string },
): { file: string; seed: number; nVocab: number; bytes: number };
