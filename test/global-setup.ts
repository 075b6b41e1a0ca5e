import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// Runs once before the suite (vitest.config.ts `globalSetup`). About 15 test files run the built dist/ and the
// simulated native build; both are brought up to date here, so an edited lib/ or src-native/ can never pass against
// yesterday's build. dist/ is compared by content (scripts/build/source-stamp.mjs) and rebuilt when it differs (tsup, a
// few seconds); the simulated build is incremental and checks itself (about a second when nothing changed).
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function run(args: string[]): { status: number | null; output: string } {
  const r = spawnSync(args[0]!, args.slice(1), { cwd: root, encoding: 'utf8' });
  return { status: r.status, output: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` };
}

export default function setup(): void {
  const check = run([process.execPath, 'scripts/build/source-stamp.mjs']);
  if (check.status !== 0) {
    process.stderr.write(`global setup: ${check.output.trim()}; rebuilding dist/ (npm run build)\n`);
    const build = run(['npm', 'run', '--silent', 'build']);
    if (build.status !== 0)
      throw new Error(`npm run build failed; the suite cannot run against a stale dist/:\n${build.output}`);
    const again = run([process.execPath, 'scripts/build/source-stamp.mjs']);
    if (again.status !== 0)
      throw new Error(`dist/ still does not match lib/ after npm run build: ${again.output.trim()}`);
  }
  // scripts/measure/native-coverage.mjs runs the suite against its own instrumented build in a copy of the worktree,
  // and says so: rebuilding here would replace it with the normal build, and the suite would measure nothing.
  if (process.platform === 'linux' && process.env.METAL_CAP_SHIM_INSTRUMENTED_BUILD !== '1') {
    const sim = run([process.execPath, 'scripts/build/build-sim.mjs']);
    if (sim.status !== 0)
      throw new Error(`npm run build:sim failed; the suite cannot run against a stale native build:\n${sim.output}`);
  }
}
