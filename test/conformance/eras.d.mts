/** A field of ggml_metal_device_props the driver reads that an era may lack (eras.mjs `lacks`). */
export type EraField = 'has_tensor' | 'desc' | 'device_id' | 'gpu_family';

/** One llama.cpp release the conformance suite builds (eras.mjs). */
export interface Era {
  id: string;
  package: string;
  integrity: string;
  kind: 'legacy' | 'device';
  init: 'void' | 'device' | 'devices' | null;
  lacks: readonly EraField[];
  chips: 'table' | 'parser' | null;
  tuning: 'chip' | 'family' | null;
  rewrites: readonly string[];
  binaries: { package: string; integrity: string } | null;
}
export const SUBSCRIPT_REWRITES: Readonly<Record<string, readonly [string, string]>>;
export const ERAS: readonly Era[];
export const BUILD_ARCHES: readonly ('arm64' | 'x86_64')[];
/** The fields an era's driver reports absent: its `lacks`, and `tuning` where it has no tuning table. */
export function absentFields(era: Era): string[];
