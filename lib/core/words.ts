/** Words for messages, below every layer that writes one (audit's warnings, format's tables). */

/** `1 answer changes`, `2 answers change`: the count with the form that agrees with it. */
export function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}
