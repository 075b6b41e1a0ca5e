import { formatProfiles } from '../format/text.js';
import { DEFAULT_PROFILE, profiles } from '../patch/profiles.js';
import { ABOVE_HARDWARE_REFERENCE, aboveHardwareRuleSets } from '../patch/plan.js';
import { EXIT, outText, printJson, styler, type Command } from './shared.js';

/** The format tag of `profiles --json`. */
export const PROFILES_SCHEMA = 'metal-cap-shim/profiles@1';

const command: Command = {
  help: () => `Usage: metal-cap-shim profiles [--json]

The built-in profiles with their values, rationale, source and risks, and the llama.cpp rule sets under which
each is refused on a stock guest (${ABOVE_HARDWARE_REFERENCE}) for asking more threadgroup memory than any Apple
GPU has (--allow-above-hardware lifts it). With --json (schema ${PROFILES_SCHEMA}), each entry's \`profile\`
object can be passed back to --profile or METAL_CAP_SHIM_PROFILE as it is; its \`aboveHardwareRefused\` lists
those rule sets.`,
  options: { json: { type: 'boolean' } },
  run({ values }) {
    const list = Object.values(profiles).map((p) => ({ ...p, aboveHardwareRefused: aboveHardwareRuleSets(p.profile) }));
    if (values.json)
      printJson({
        schema: PROFILES_SCHEMA,
        default: DEFAULT_PROFILE,
        aboveHardwareReference: ABOVE_HARDWARE_REFERENCE,
        profiles: list,
      });
    else outText(formatProfiles(list, DEFAULT_PROFILE, styler()));
    return EXIT.ok;
  },
};

export default command;
