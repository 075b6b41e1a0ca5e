// The part of sim-toolchain.mjs the TypeScript tests use.
/** The file `name` resolves to on `env.PATH`, or null. */
export function onPath(name: string, env?: NodeJS.ProcessEnv): string | null;
/** One thing the simulated build needs, and the Debian package that brings it. */
export interface SimRequirement {
  what: string;
  package: string;
  sanitize?: boolean;
  present(env: NodeJS.ProcessEnv): boolean;
}
export const SIM_REQUIREMENTS: readonly SimRequirement[];
export function missingRequirements(options?: { sanitize?: boolean; env?: NodeJS.ProcessEnv }): SimRequirement[];
export function missingLine(missing: readonly SimRequirement[], command?: string): string;
