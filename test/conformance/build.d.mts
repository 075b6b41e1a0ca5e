import type { Era } from './eras.mjs';

/** One built era (build.mjs): its identity and, per build configuration, the driver's three outputs. */
export interface BuiltEra {
  era: Era;
  dir: string;
  cached: boolean;
  release: string;
  commit: string;
  ggmlVersion: string | null;
  /** The GGML_METAL_* names its ggml sources spell out (getenv("…"), @"…"): every switch it can read is among them. */
  switches: string[];
  outputs: Record<'arm64' | 'x86_64', { lib: string; addon: string; cli: string }>;
}
export const conformanceRoot: string;
export function tarballName(spec: string): string;
export function fetchTarball(spec: string, integrity: string): Promise<string>;
export function rewriteSubscripts(text: string, ids: readonly string[], file: string): string;
export function fetchBinaries(era: Era): Promise<string | null>;
export function buildLauncher(): Promise<string>;
export function buildConformance(options?: { eras?: readonly Era[] }): Promise<BuiltEra[]>;
export function cloneBundle(tgz: string, work: string): Promise<{ repo: string; tag: string; commit: string }>;
export function archiveTree(repo: string, dir: string, paths?: readonly string[]): Promise<void>;
