/** Words for messages, below every layer that writes one (audit's warnings, format's tables). */

/** `1 answer changes`, `2 answers change`: the count with the form that agrees with it. */
export function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/**
 * The word every output gives a report's `architecture.name` where the report holds none: `unrecorded` (a snapshot
 * that did not record it, or macOS before 14, which cannot answer). It is a fact about the report, not about the GPU,
 * so it is not `unknown`, the word for a value that cannot be predicted (an MLX value that needs the name).
 */
export const ARCHITECTURE_UNRECORDED = 'unrecorded';

/** A device's `architecture.name` as every command shows it: the name, or ARCHITECTURE_UNRECORDED. */
export function architectureText(architecture: string | null): string {
  return architecture ?? ARCHITECTURE_UNRECORDED;
}
