/**
 * The exit codes every command shares, defined once: the commands return them, lib/cli/main.ts maps errors to them, and
 * the README's table is generated from EXIT_TABLE (scripts/check/exit-table.mjs; test/repo/docs.test.ts checks it is
 * current). A module of its own, importing nothing, so that lib/cli/main.ts can use them without loading a command's
 * helpers. `exec` passes the program's own code through instead; its own failures are EXEC_EXIT's.
 */
export const EXIT = Object.freeze({
  ok: 0,
  finding: 1,
  usage: 2,
  refused: 3,
  noMetal: 4,
  notRunnable: 126,
  notFound: 127,
  hangUp: 129,
  interrupted: 130,
  terminated: 143,
});

/** What each code means, in the order of the README's table. */
export const EXIT_TABLE: readonly { code: number; name: keyof typeof EXIT; short: string; meaning: string }[] =
  Object.freeze([
    {
      code: EXIT.ok,
      name: 'ok',
      short: 'ok',
      meaning:
        'done: the profile verifies, no fault was found, or the data was collected (`snapshot` and `report` record a refusal as data)',
    },
    {
      code: EXIT.finding,
      name: 'finding',
      short: 'a finding (does not verify, a fault) or a failure',
      meaning:
        "`audit`: the profile does not verify; `doctor`: a probe found a fault (also a replayed one); `bench`: a profile differs in fidelity or greedy tokens; or the work itself failed (a hook could not be installed, the probe runner would not start, a run of `bench`'s tool failed, or a patched side of `bench` was not patched: the result is refused)",
    },
    {
      code: EXIT.usage,
      name: 'usage',
      short: 'usage',
      meaning:
        'a bad option, an invalid profile, or a snapshot, report or file that does not exist or cannot be used (`matrix`: a report it skipped)',
    },
    {
      code: EXIT.refused,
      name: 'refused',
      short: 'refused',
      meaning:
        'refused: raising answers on a host that is not known to be a VM without `--force`, a `"host"` value where the host’s chip is unknown, an MLX architecture the host cannot take, or injection that cannot work',
    },
    {
      code: EXIT.noMetal,
      name: 'noMetal',
      short: 'no Metal here',
      meaning: 'no Metal here: not macOS (and no simulated Metal), no device, or the native module will not load',
    },
    {
      code: EXIT.notRunnable,
      name: 'notRunnable',
      short: 'the program cannot be run',
      meaning:
        'the program `exec` or `bench` was given is there but cannot be run (a folder, a file without execute permission), as a shell says',
    },
    {
      code: EXIT.notFound,
      name: 'notFound',
      short: 'the program is not found',
      meaning: 'the program `exec` or `bench` was given is not found (not on `PATH`, or no such file), as a shell says',
    },
    {
      code: EXIT.hangUp,
      name: 'hangUp',
      short: 'hung up (SIGHUP)',
      meaning:
        '`bench` stopped by SIGHUP (its terminal closed): what was measured is printed and written, marked partial (128 + the signal number, as a shell reports it)',
    },
    {
      code: EXIT.interrupted,
      name: 'interrupted',
      short: 'interrupted (SIGINT)',
      meaning: '`bench` stopped by Ctrl-C (SIGINT): what was measured is printed and written, marked partial',
    },
    {
      code: EXIT.terminated,
      name: 'terminated',
      short: 'terminated (SIGTERM)',
      meaning:
        '`bench` stopped by SIGTERM (a supervisor, `kill`): what was measured is printed and written, marked partial',
    },
  ]);

/** The exit code of a command stopped cleanly by a signal it handles (128 + the signal's number, as a shell says). */
export const SIGNAL_EXIT = Object.freeze({
  SIGHUP: EXIT.hangUp,
  SIGINT: EXIT.interrupted,
  SIGTERM: EXIT.terminated,
});

/** The error codes that mean there is no Metal to work with here. */
export const NO_METAL_CODES: ReadonlySet<string> = new Set([
  'ERR_UNSUPPORTED_PLATFORM',
  'ERR_NO_DEVICE',
  'ERR_NATIVE_UNAVAILABLE',
]);

/**
 * exec's own exit codes, as env(1), timeout(1) and nice(1) have them, so that they cannot be mistaken for the
 * program's: 125 exec itself failed, 126 the program is there but cannot be run, 127 it is not found.
 */
export const EXEC_EXIT = Object.freeze({ failed: 125, notRunnable: EXIT.notRunnable, notFound: EXIT.notFound });
