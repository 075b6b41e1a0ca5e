import { audit } from '../audit.js';
import { UsageError } from '../errors.js';
import { formatAudit } from '../format.js';
import { ENGINES, type Engine, type LlamaCppRuleSet } from '../gates.js';
import { DEFAULT_PROFILE, resolveProfile } from '../profiles.js';
import { profileArgument, profileHelp } from './profile-option.js';
import { EXIT, out, printJson, styler, text, type Command } from './shared.js';
import { bundledSnapshotsHelp } from './snapshot-help.js';

function engineList(value: string | undefined): Engine[] {
  if (value === undefined || value === 'all') return [...ENGINES];
  if (!(ENGINES as readonly string[]).includes(value)) {
    throw new UsageError(`--engine must be ${ENGINES.join(', ')} or all, got '${value}'`);
  }
  return [value as Engine];
}

function rulesOf(value: string | undefined, engines: Engine[]): LlamaCppRuleSet {
  if (value === undefined) return 'current';
  if (value !== 'current' && value !== 'legacy') throw new UsageError(`--rules must be current or legacy, got '${value}'`);
  // The rule generations are llama.cpp's; asking for them without llama.cpp is a mistake worth saying.
  if (!engines.includes('llama.cpp')) throw new UsageError(`--rules ${value} applies to llama.cpp only, but --engine is ${engines.join(', ')}`);
  return value;
}

const command: Command = {
  help: () => `Usage: metal-cap-shim audit [--profile P] [--snapshot S] [--engine E] [--rules R] [--force] [--json]

  ${profileHelp(17)}
  --snapshot S     audit a recorded snapshot offline (any OS); without it the profile is applied in this
                   process, verified and restored (macOS)
  --engine E       llama.cpp, mlx or all (default all)
  --rules R        llama.cpp rule generation: current or legacy (default current); llama.cpp only
  --force          allow raising answers on a host that is not a VM
  --json           machine-readable result (schema metal-cap-shim/audit@1)
Exit code 3 when the profile would be refused on that host, 1 when it does not verify.

${bundledSnapshotsHelp()}`,
  options: {
    profile: { type: 'string' },
    snapshot: { type: 'string' },
    engine: { type: 'string' },
    rules: { type: 'string' },
    force: { type: 'boolean' },
    json: { type: 'boolean' },
  },
  run({ values }) {
    const engines = engineList(text(values, 'engine'));
    const rules = rulesOf(text(values, 'rules'), engines);
    const given = text(values, 'profile');
    const profile = resolveProfile(given !== undefined ? profileArgument(given) : DEFAULT_PROFILE);
    const snapshot = text(values, 'snapshot');
    const result = audit({ profile, engines, rules, force: values.force === true, ...(snapshot !== undefined ? { snapshot } : {}) });
    if (values.json) printJson(result);
    else out(formatAudit(result, styler()));
    if (result.refused) return EXIT.refused;
    return result.verdict.ok ? EXIT.ok : EXIT.failure;
  },
};

export default command;
