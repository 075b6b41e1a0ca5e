/**
 * Exit codes, as documented in the README. A module of its own, importing nothing, so that lib/cli.ts can use them
 * without loading a command's shared helpers at start-up.
 */
export const EXIT = { ok: 0, failure: 1, usage: 2, refused: 3 } as const;
