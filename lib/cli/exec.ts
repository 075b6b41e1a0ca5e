import { preloadVariable, prepareExec, runWithInjector, signalExitStatus } from '../exec.js';
import { profileForExec } from '../doctor/auto.js';
import { profileHelp } from './profile-option.js';
import { err, EXIT, text, type Command } from './shared.js';

const command: Command = {
  help: () => `Usage: metal-cap-shim exec [--profile P] [--trace FILE] [--force] [--allow-unpatched] [--json] -- command [args…]

  ${profileHelp(19)}
                     Also auto (the verified profile of doctor). Without --profile: METAL_CAP_SHIM_PROFILE if set.
  --trace FILE       write what the program asked and what it was told to FILE (JSON) at exit; a second
                     process that uses Metal (one the program started) writes FILE.<pid>; an unpatched
                     run writes one saying nothing was applied
  --force            allow raising answers on a host that is not a VM
  --allow-unpatched  run the program unpatched where it cannot be patched (any OS without Metal, a refusal,
                     SIP-protected programs and scripts), with one notice on stderr: a cross-platform wrapper
  --json             after the program ends, one JSON line on stderr: exit code, signal, whether the injector
                     loaded (and which slice), the patched classes, warnings; a failure of exec itself is one
                     {"error": …} line on stderr (stdout is the program's)
The program's exit code is passed through; if it dies from a signal, that is reported and re-raised.
Nothing is printed into the program's output; notices from metal-cap-shim go to stderr.`,
  options: {
    profile: { type: 'string' },
    trace: { type: 'string' },
    force: { type: 'boolean' },
    'allow-unpatched': { type: 'boolean' },
    json: { type: 'boolean' },
  },
  positionals: 'after-dashdash',
  async run({ values, rest }) {
    // `auto` is resolved here, before the program starts; without --profile, METAL_CAP_SHIM_PROFILE decides.
    const profile = profileForExec(text(values, 'profile'), process.env, values.force === true);
    const trace = text(values, 'trace');
    const options = {
      profile,
      command: rest[0]!,
      args: rest.slice(1),
      force: values.force === true,
      allowUnpatched: values['allow-unpatched'] === true,
      ...(trace !== undefined ? { traceFile: trace } : {}),
    };
    const prepared = prepareExec(options);
    if (prepared.unpatched !== null) err(`metal-cap-shim: ${prepared.unpatched}`);
    // Said once, before the program runs: the other warnings are in the --json summary.
    for (const w of prepared.warnings) if (w.code === 'above-host-family') err(`metal-cap-shim: warning: ${w.message}`);
    const run = prepared.injector === null ? options : { ...options, profile: prepared.profile };
    const outcome = await runWithInjector(run, prepared.injector, prepared.warnings);
    // The program owns stdout; the summary for scripts goes to stderr, after it has finished.
    if (values.json) err(JSON.stringify({ schema: 'metal-cap-shim/exec@1', command: options.command, ...outcome }));
    if (!outcome.injectorLoaded && prepared.injector !== null) {
      err(`metal-cap-shim: the shim did not load into ${options.command}, so it ran unpatched (the loader dropped ${preloadVariable()}; on macOS: SIP, a hardened runtime without the allow-dyld-environment-variables entitlement, or a platform binary)`);
    }
    for (const e of outcome.injectorErrors) err(`metal-cap-shim: injector error: ${e}`);
    if (outcome.signal) {
      err(`metal-cap-shim: ${options.command} was killed by ${outcome.signal}`);
      // Die the same way, so a parent shell sees the signal, not an ordinary exit. Node ignores a few signals
      // (SIGPIPE), so if we are still here, exit the way a shell reports a signal death: 128 + its number.
      process.kill(process.pid, outcome.signal);
      return signalExitStatus(outcome.signal);
    }
    return outcome.exitCode ?? EXIT.failure;
  },
};

export default command;
