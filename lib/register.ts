/**
 * `import 'metal-cap-shim/register'` (or `node --import metal-cap-shim/register app.js`): applies the profile named by
 * METAL_CAP_SHIM_PROFILE (a built-in name, JSON, or `auto` for the verified profile; default host-family; `off`
 * disables) when the process runs inside a macOS virtual machine, and does nothing elsewhere. It must run before any
 * engine initialises Metal.
 */
import { autoCacheNotices, PROFILE_ENV as PROFILE_VARIABLE } from './select/auto.js';
import { MetalCapShimError } from './core/errors.js';
import { escapeControl } from './core/escape.js';
import { registerFromEnvironment } from './select/registration.js';
import { SAID_ONCE, saidOnce } from './patch/plan.js';

/** The environment variable register reads. Typed as its literal so this entry's declarations stand alone. */
export const PROFILE_ENV: 'METAL_CAP_SHIM_PROFILE' = PROFILE_VARIABLE;

try {
  const outcome = registerFromEnvironment();
  // The value was valid; if patching itself fails (nothing was left installed), the program still runs, unpatched,
  // and says so.
  if (outcome.action === 'not-applied') {
    process.emitWarning(escapeControl(`metal-cap-shim/register: profile not applied (${outcome.why})`), {
      code: 'METAL_CAP_SHIM_NOT_APPLIED',
    });
  }
  // Nothing would be applied here (no Metal), so a value that is no profile only costs a warning.
  if (outcome.action === 'no-native' && outcome.ignored !== null) {
    process.emitWarning(
      escapeControl(
        `metal-cap-shim/register: ${outcome.ignored.code}: ${outcome.ignored.message} (ignored: no Metal here)`,
      ),
      {
        code: 'METAL_CAP_SHIM_INVALID_PROFILE',
      },
    );
  }
  // Profile auto ignored a cache file (a planted folder, a hand-edited file) or could not write one: one warning each,
  // applied or not.
  const auto =
    outcome.action === 'applied'
      ? (outcome.result.auto ?? null)
      : outcome.action === 'not-applied'
        ? outcome.auto
        : null;
  for (const n of auto === null ? [] : autoCacheNotices(auto)) {
    process.emitWarning(escapeControl(`metal-cap-shim/register: ${n.message}`), {
      code: n.code === 'cache-ignored' ? 'METAL_CAP_SHIM_CACHE_IGNORED' : 'METAL_CAP_SHIM_CACHE_NOT_WRITTEN',
    });
  }
  // Applied, but with a fallback profile or claiming a newer GPU than the host's: each said once, in one line.
  for (const w of outcome.action === 'applied' ? saidOnce(outcome.result.warnings) : [])
    process.emitWarning(`metal-cap-shim/register: ${w.message}`, { code: SAID_ONCE[w.code]! });
} catch (err) {
  if (!(err instanceof MetalCapShimError)) throw err;
  // Written whole before exiting. Through a pipe, Node writes what the pipe takes (64 KiB less what it already
  // holds) and queues the rest, which process.exit() drops: make stderr's writes block first (libuv's blocking mode).
  (process.stderr as unknown as { _handle?: { setBlocking?: (on: boolean) => unknown } })._handle?.setBlocking?.(true);
  process.stderr.write(`metal-cap-shim/register: ${err.code}: ${escapeControl(err.message)}\n`);
  process.exit(1);
}
