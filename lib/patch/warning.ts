/** The warnings a profile can earn: their stable codes, and their shape. plan.ts re-exports both. */

/** Every code an ApplyWarning can have: stable, and documented in docs/profiles.md. */
export const APPLY_WARNING_CODES = Object.freeze([
  'advertises-metal3',
  'threadgroup-memory-above-hardware',
  'not-paravirtual',
  'consumer-already-loaded',
  'tuned-for-other-chip',
  'heap-in-vm',
  'mlx-switch-ignored',
  'above-host-family',
  'host-unknown-fallback',
  'no-change',
  'mlx-architecture-not-offered',
  'mlx-architecture-ignored',
  'mlx-architecture-user-set',
] as const);

/** A warning about a profile or the process it is applied in; `code` is stable. */
export interface ApplyWarning {
  code: (typeof APPLY_WARNING_CODES)[number];
  message: string;
}
