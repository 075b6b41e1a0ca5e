/**
 * The system tools exec asks, by absolute path. Never by bare name: libuv treats an empty PATH entry (`PATH=/usr/bin:`)
 * as the current folder, so a `codesign` or `ps` planted there would run before every exec (CWE-426).
 */
export const SYSTEM_TOOLS = Object.freeze({
  /** macOS: reads a program's signature flags and entitlements. */
  codesign: '/usr/bin/codesign',
  /** macOS (and Linux, where the tests run the macOS branch): process-group ids when the addon is missing. */
  ps: '/bin/ps',
});
