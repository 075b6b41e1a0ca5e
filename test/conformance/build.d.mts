import type { Era } from './eras.mjs';

/** One built era (build.mjs): its identity and, per build configuration, the driver's three outputs. */
export interface BuiltEra {
  era: Era;
  dir: string;
  /** Nothing was compiled: the clone's links were up to date, or the objects came from the object cache. */
  cached: boolean;
  /** Linked just now (from cached or freshly compiled objects), rather than found up to date in the clone. */
  linked: boolean;
  /** The folder holding the era's objects: the object cache's entry, or `dir` when built in the clone. */
  objects: string;
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
/** `cache: false` compiles in build/conformance/<era>-<key>/ instead of the object cache outside the clone. */
export function buildConformance(options?: { eras?: readonly Era[]; cache?: boolean }): Promise<BuiltEra[]>;
export function cloneBundle(tgz: string, work: string): Promise<{ repo: string; tag: string; commit: string }>;
export function archiveTree(repo: string, dir: string, paths?: readonly string[]): Promise<void>;
