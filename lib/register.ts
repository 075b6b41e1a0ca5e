/**
 * `import 'metal-cap-shim/register'` (or `node --import metal-cap-shim/register app.js`): applies the profile named by
 * METAL_CAP_SHIM_PROFILE (a built-in name, JSON, or `auto` for the verified profile; default cua-release; `off`
 * disables) when the process runs inside a macOS virtual machine, and does nothing elsewhere. It must run before any
 * engine initialises Metal.
 */
import { PROFILE_ENV as PROFILE_VARIABLE } from './doctor/auto.js';
import { MetalCapShimError } from './errors.js';
import { registerFromEnvironment } from './registration.js';

/** The environment variable register reads. Typed as its literal so this entry's declarations stand alone. */
export const PROFILE_ENV: 'METAL_CAP_SHIM_PROFILE' = PROFILE_VARIABLE;

try {
  const outcome = registerFromEnvironment();
  // The value was valid; if patching itself fails (nothing was left installed), the program still runs, unpatched,
  // and says so.
  if (outcome.action === 'not-applied') {
    process.emitWarning(`metal-cap-shim/register: profile not applied (${outcome.why})`, { code: 'METAL_CAP_SHIM_NOT_APPLIED' });
  }
  // Applied, but claiming a newer GPU than the host's: said once, in one line.
  const above = outcome.action === 'applied' ? outcome.result.warnings.find((w) => w.code === 'above-host-family') : undefined;
  if (above !== undefined) process.emitWarning(`metal-cap-shim/register: ${above.message}`, { code: 'METAL_CAP_SHIM_ABOVE_HOST_FAMILY' });
} catch (err) {
  if (!(err instanceof MetalCapShimError)) throw err;
  process.stderr.write(`metal-cap-shim/register: ${err.code}: ${err.message}\n`);
  process.exit(1);
}
