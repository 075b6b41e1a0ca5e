/** Whether progress may rewrite a line in place (progress.mjs). */
export function inPlace(stream?: Pick<NodeJS.WriteStream, 'isTTY'>, env?: NodeJS.ProcessEnv): boolean;
/** A reporter for `total` steps (progress.mjs). */
export function createProgress(options: {
  total: number;
  write: (text: string) => void;
  now?: () => number;
  tty?: boolean;
  columns?: number;
}): {
  start(name: string, doing?: string): void;
  done(name: string, verb: string): void;
  end(): void;
};
/** A duration for a person: `42s`, `3m07s`, `1h02m` (progress.mjs). */
export function formatDuration(ms: number): string;
/** The time left at the rate so far, or null before any step ended (progress.mjs). */
export function timeLeft(done: number, total: number, elapsedMs: number): number | null;
/** ninja's `[n/m] ` status prefix, or null (progress.mjs). */
export function ninjaStatus(line: string): { done: number; total: number } | null;
