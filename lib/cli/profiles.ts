import { formatProfiles } from '../format/text.js';
import { DEFAULT_PROFILE, profiles } from '../patch/profiles.js';
import { EXIT, outText, printJson, styler, type Command } from './shared.js';

/** The format tag of `profiles --json`. */
export const PROFILES_SCHEMA = 'metal-cap-shim/profiles@1';

const command: Command = {
  help: () => `Usage: metal-cap-shim profiles [--json]

The built-in profiles with their values, rationale, source and risks. With --json (schema ${PROFILES_SCHEMA}),
each entry's \`profile\` object can be passed back to --profile or METAL_CAP_SHIM_PROFILE as it is.`,
  options: { json: { type: 'boolean' } },
  run({ values }) {
    const list = Object.values(profiles);
    if (values.json) printJson({ schema: PROFILES_SCHEMA, default: DEFAULT_PROFILE, profiles: list });
    else outText(formatProfiles(list, DEFAULT_PROFILE, styler()));
    return EXIT.ok;
  },
};

export default command;
