import { probe, probeSnapshot } from '../device/probe.js';
import { UsageError } from '../core/errors.js';
import type { Profile } from '../patch/profiles.js';
import { EXIT, outText, printJson, styler, text, type Command } from './shared.js';

/** The profile `probe --short` shows the arrows for. */
async function shortProfile(flag: string | undefined): Promise<Profile> {
  const [{ DEFAULT_PROFILE, resolveProfile }, { profileArgument }] = await Promise.all([
    import('../patch/profiles.js'),
    import('./profile-option.js'),
  ]);
  return resolveProfile(flag !== undefined ? profileArgument(flag) : DEFAULT_PROFILE);
}

const command: Command = {
  help: async () => `Usage: metal-cap-shim probe [--json | --short [--profile P] [--allow-above-hardware]] [--all-devices]
                           [--snapshot NAME|PATH]

  --json           machine-readable report (schema metal-cap-shim/report@1)
  --short          one line per device (every device): name, Apple family stock → under the profile,
                   threadgroup memory, the GPU architecture (→ the one offered to MLX), VM or not, and
                   llama.cpp's three gates stock → patched
  --profile P      with --short: the profile the arrows show (default: the one \`metal-cap-shim profiles\`
                   marks default); a built-in name, JSON, or a .json file
  --allow-above-hardware
                   with --short: show a profile whose threadgroup memory the newest llama.cpp rules would turn
                   into a request above every Apple GPU's 32768 bytes as applied, not refused
  --all-devices    every device, not only the default one
  --snapshot S     a recorded snapshot (bundled name or .json path, - for stdin) instead of this machine; any OS
Exit code ${EXIT.noMetal} when nothing can be asked here (not macOS, no device, no native module): one line on
stderr says why, as every command's failure does.

${(await import('./snapshot-help.js')).bundledSnapshotsHelp()}`,
  options: {
    json: { type: 'boolean' },
    short: { type: 'boolean' },
    profile: { type: 'string' },
    'allow-above-hardware': { type: 'boolean' },
    'all-devices': { type: 'boolean' },
    snapshot: { type: 'string' },
  },
  async run({ values }) {
    const short = values.short === true;
    if (short && values.json) throw new UsageError('--short and --json are two forms of the output: give one');
    const profileFlag = text(values, 'profile');
    if (profileFlag !== undefined && !short)
      throw new UsageError('--profile goes with --short (probe itself reports stock answers)');
    const allowAboveHardware = values['allow-above-hardware'] === true;
    if (allowAboveHardware && !short)
      throw new UsageError('--allow-above-hardware goes with --short (probe itself reports stock answers)');
    const opts = { allDevices: short || values['all-devices'] === true };
    const snapshot = text(values, 'snapshot');
    // Profiles and the text formatter load only when asked for, so `probe --json` starts without them; the profile is
    // checked before anything is asked.
    const profile = short ? await shortProfile(profileFlag) : null;
    const report = snapshot !== undefined ? probeSnapshot(snapshot, opts) : probe(opts);
    if (!report.supported) throw (await import('../patch/apply.js')).notAppliedError(report.reason, report.detail);
    if (values.json) printJson(report);
    else if (profile !== null)
      outText((await import('./probe-short.js')).formatShort(report, profile, process.env, allowAboveHardware));
    else outText((await import('../format/text.js')).formatReport(report, styler()));
    return EXIT.ok;
  },
};

export default command;
