import type { ChildProcess } from 'node:child_process';

export type StopSignal = 'SIGINT' | 'SIGTERM' | 'SIGHUP';
export const STOP_SIGNALS: readonly StopSignal[];
/** 128 + the signal's number, as a shell reports it. */
export function signalExitCode(signal: NodeJS.Signals): number;
export interface CleanupGuard {
  folder(dir: string): string;
  child<C extends ChildProcess>(child: C): C;
  stopping(): StopSignal | null;
  release(): void;
}
export function cleanupOnSignal(options?: {
  log?: (line: string) => void;
  exit?: (code: number) => void;
}): CleanupGuard;
