// What status() returns when nothing is patched, written once for every suite that compares it whole.
// lib/patch/apply.ts builds these inline (it exports no constant), so they are typed here by its Status union: a
// field added to Status fails to compile here first.
import type { Status } from '../../lib/patch/apply.js';

/** status() where the addon did not load (any non-Mac install, a Mac without the build): nothing can be patched. */
export const NO_ADDON_STATUS: Extract<Status, { supported: false }> = {
  supported: false,
  active: false,
  profile: null,
  patchedClasses: [],
  hooks: [],
  tracing: false,
  trace: null,
  llamaCpp: [],
};

/** status() with the addon loaded and no profile applied (none yet, or restored), asked without the trace. */
export const INACTIVE_STATUS: Extract<Status, { supported: true; active: false }> = {
  supported: true,
  active: false,
  profile: null,
  patchedClasses: [],
  hooks: [],
  tracing: false,
  trace: null,
  llamaCpp: [],
};
