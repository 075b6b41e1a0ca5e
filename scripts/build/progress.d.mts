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
