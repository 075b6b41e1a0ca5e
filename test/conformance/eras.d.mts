/** One llama.cpp release the conformance suite builds (eras.mjs). */
export interface Era {
  id: string;
  package: string;
  integrity: string;
  kind: 'legacy' | 'device';
  tuning: 'chip' | 'family' | null;
  rewrites: readonly string[];
  binaries: { package: string; integrity: string } | null;
}
export const SUBSCRIPT_REWRITES: Readonly<Record<string, readonly [string, string]>>;
export const ERAS: readonly Era[];
export const BUILD_ARCHES: readonly ('arm64' | 'x86_64')[];
