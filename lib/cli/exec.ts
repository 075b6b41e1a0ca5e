import { inheritedDescriptors } from '../exec/descriptors.js';
import { preloadVariable } from '../exec/injector.js';
import { prepareExec } from '../exec/prepare.js';
import { runWithInjector } from '../exec/run.js';
import { signalExitStatus } from '../exec/signals.js';
import { saidOnce } from '../patch/plan.js';
import { autoCacheNotices, PROFILE_ENV, profileForExec } from '../select/auto.js';
import { profileArgument, profileHelp } from './profile-option.js';
import { err, EXIT, text, type Command } from './shared.js';

const command: Command = {
  help: () => `Usage: metal-cap-shim exec [--profile P] [--trace FILE] [--force] [--allow-above-hardware]
                           [--allow-unpatched] [--quiet] [--json] -- command [args…]

  ${profileHelp(19)}
                     Also auto (the verified profile of doctor). Without --profile: METAL_CAP_SHIM_PROFILE if set.
  --trace FILE       write what the program asked and what it was told to FILE (JSON) at exit; a second
                     process that uses Metal (one the program started) writes FILE.<pid>; an unpatched
                     run writes one saying nothing was applied. FILE must be new, or a regular file of
                     yours, which is replaced (never a link, a FIFO or another user's file)
  --force            allow raising answers on a host that is not a VM
  --allow-above-hardware
                     inject a threadgroup memory claim the newest llama.cpp rules would turn into a request
                     above every Apple GPU's 32768 bytes (refused otherwise; also
                     METAL_CAP_SHIM_ALLOW_ABOVE_HARDWARE=1 in exec's environment)
  --allow-unpatched  run the program unpatched where it cannot be patched (any OS without Metal, a refusal,
                     SIP-protected programs and scripts), with one notice on stderr: a cross-platform wrapper
  --quiet, -q        no notices on stderr (running unpatched, the shim did not load, killed by a signal);
                     errors and warnings still print
  --json             after the program ends, one JSON line on stderr: exit code, signal, whether the injector
                     loaded (and which slice), the patched classes, warnings, where profile auto came from
                     (auto); a failure of exec itself is one {"error": …} line on stderr (stdout is the program's)
The program's exit code is passed through; if it dies from a signal, that is reported and re-raised.
exec's own failures exit 125 (usage, profile, refusal, injector, --trace), 126 when the program is there but
cannot be run (a folder, no execute permission), 127 when it is not found.
Descriptors above 2 given to exec (3>file, a socket, make's jobserver) reach the program under the same numbers.
Nothing is printed into the program's output; notices from metal-cap-shim go to stderr.`,
  options: {
    profile: { type: 'string' },
    trace: { type: 'string' },
    force: { type: 'boolean' },
    'allow-above-hardware': { type: 'boolean' },
    'allow-unpatched': { type: 'boolean' },
    json: { type: 'boolean' },
    quiet: { type: 'boolean', short: 'q' },
  },
  positionals: 'after-dashdash',
  async run({ values, rest }) {
    // Listed before this process opens anything of its own: what is open now came with it, or is Node's.
    const passFds = inheritedDescriptors();
    // `auto` is resolved here, before the program starts; without --profile, METAL_CAP_SHIM_PROFILE decides.
    const given = text(values, 'profile');
    const { profile, auto } = profileForExec(
      given !== undefined ? profileArgument(given) : undefined,
      process.env,
      values.force === true,
    );
    // A cache file `auto` ignored (a planted folder, a hand-edited file) or could not write is a warning, said before
    // the program runs (also with --quiet, like every warning); --json's summary has them too, in `auto`.
    for (const n of auto === null ? [] : autoCacheNotices(auto)) err(`metal-cap-shim: warning: ${n.message}`);
    const trace = text(values, 'trace');
    const options = {
      profile,
      command: rest[0]!,
      args: rest.slice(1),
      force: values.force === true,
      // The flag, else exec's environment (prepareExec reads it) decides.
      ...(values['allow-above-hardware'] === true ? { allowAboveHardware: true } : {}),
      allowUnpatched: values['allow-unpatched'] === true,
      passFds,
      ...(trace !== undefined ? { traceFile: trace } : {}),
    };
    // --quiet: the notices (running unpatched, the shim did not load, killed by a signal) are left out; an error of
    // exec itself or of the injector still prints.
    const notice = values.quiet === true ? () => {} : err;
    const prepared = prepareExec(options);
    // METAL_CAP_SHIM_PROFILE=off: the kill switch, said once (not with --quiet), and the program runs as it is.
    if (profile === null) notice(`metal-cap-shim: ${PROFILE_ENV}=off: running ${options.command} unpatched`);
    else if (prepared.unpatched !== null) notice(`metal-cap-shim: ${prepared.unpatched}`);
    // Said once, before the program runs: the other warnings are in the --json summary.
    for (const w of saidOnce(prepared.warnings)) err(`metal-cap-shim: warning: ${w.message}`);
    const run = prepared.injector === null ? options : { ...options, profile: prepared.profile };
    // The file prepareExec checked is the file that runs: PATH is not searched again.
    const outcome = await runWithInjector({ ...run, program: prepared.resolved }, prepared.injector, prepared.warnings);
    // The program owns stdout; the summary for scripts goes to stderr, after it has finished.
    if (values.json)
      err(JSON.stringify({ schema: 'metal-cap-shim/exec@1', command: options.command, ...outcome, auto }));
    if (!outcome.injectorLoaded && prepared.injector !== null) {
      notice(
        `metal-cap-shim: the shim did not load into ${options.command}, so it ran unpatched (the loader dropped ${preloadVariable()}; on macOS: SIP, a hardened runtime without the allow-dyld-environment-variables entitlement, or a platform binary)`,
      );
    }
    for (const e of outcome.injectorErrors) err(`metal-cap-shim: injector error: ${e}`);
    if (outcome.signal) {
      notice(`metal-cap-shim: ${options.command} was killed by ${outcome.signal}`);
      // Die the same way, so a parent shell sees the signal, not an ordinary exit. Node ignores a few signals
      // (SIGPIPE), so if we are still here, exit the way a shell reports a signal death: 128 + its number.
      process.kill(process.pid, outcome.signal);
      return signalExitStatus(outcome.signal);
    }
    return outcome.exitCode ?? EXIT.finding;
  },
};

export default command;
