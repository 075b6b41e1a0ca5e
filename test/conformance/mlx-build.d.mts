/** One pinned MLX commit (mlx-build.mjs): the release it is, the file holding is_nax_available, each file's SHA-256. */
export interface MlxPin {
  release: string;
  commit: string;
  nax: string;
  files: Record<string, string>;
}
export const MLX_COMMITS: readonly MlxPin[];
export function readMlxFile(commit: string, file: string, expected: string): Promise<string>;
export function takeBlock(text: string, start: string, what: string): string;
export function takeLines(text: string, from: string, to: string, what: string): string;
export function extractParts(
  files: Record<string, string>,
  pin: MlxPin,
): { init: string; nax: string; qmv: string; env: string };
export function buildMlxHarness(commits?: readonly MlxPin[]): Promise<(MlxPin & { exe: string; hasQmv: boolean })[]>;

export class MlxSourceUnreachable extends Error {}
