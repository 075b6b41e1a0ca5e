export const NODE_MAJORS: readonly string[];
export const NODE_MAJORS_FILES: readonly string[];
export function majorsOption(argv: readonly string[], flag: string, fallback: readonly string[]): string[];
export function nodeBinary(major: string): { binary: string; version: string };
