/** The simulated VM the benches run in (try-bench.mjs). */
export const SIM_SNAPSHOT: string;
/** One step's cost: the first time, after, and what it writes. */
export interface StepCost {
  cold: string;
  warm: string;
  disk: string;
}
export const STEP_COSTS: Readonly<Record<string, StepCost>>;
export interface PlannedStep extends StepCost {
  name: string;
  what: string;
}
export function plannedSteps(options: { tools: boolean }): PlannedStep[];
export function planLines(steps: readonly PlannedStep[]): string[];
export interface TryBenchOptions {
  tools: boolean;
  rounds: number;
  help: boolean;
}
export function parseArgs(
  args: readonly string[],
): { options: TryBenchOptions; error?: undefined } | { error: string; options?: undefined };
