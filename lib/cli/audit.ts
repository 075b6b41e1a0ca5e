import { audit } from '../audit/audit.js';
import { UsageError } from '../core/errors.js';
import { choiceMessage } from '../core/suggest.js';
import { formatAudit } from '../format/text.js';
import {
  checkOllamaRelease,
  ENGINES,
  LLAMA_CPP_RULE_SETS,
  ollamaReleases,
  parseMlxRelease,
  parseRelease,
  type Engine,
  type LlamaCppRuleSet,
} from '../engines/index.js';
import { DEFAULT_PROFILE, resolveProfile } from '../patch/profiles.js';
import { profileArgument, profileHelp } from './profile-option.js';
import { EXIT, outText, printJson, styler, text, type Command } from './shared.js';
import { bundledSnapshotsHelp } from './snapshot-help.js';

/**
 * What `--engine` takes: each engine, all of them, or `ollama`: llama.cpp as an Ollama release builds it. `all` is
 * llama.cpp and MLX only, since Ollama's prediction is llama.cpp's for the release `--release` names.
 */
const ENGINE_CHOICES: readonly string[] = [...ENGINES, 'ollama', 'all'];

/** `--engine`'s engines (its value one of ENGINE_CHOICES, which lib/cli/main.ts checks). */
function engineList(value: string | undefined): Engine[] {
  if (value === 'ollama') return ['llama.cpp'];
  return value === undefined || value === 'all' ? [...ENGINES] : [value as Engine];
}

/** `--release` names an Ollama release (default the newest covered) and goes with `--engine ollama` only. */
function ollamaOption(engine: string | undefined, release: string | undefined, rules: string | undefined) {
  if (engine !== 'ollama') {
    if (release !== undefined)
      throw new UsageError(
        `--release names an Ollama release and applies to --engine ollama only; for a llama.cpp release use --rules ${release}`,
      );
    return {};
  }
  if (rules !== undefined)
    throw new UsageError(`--rules ${rules} does not go with --engine ollama: the Ollama release decides the rules`);
  return { ollamaRelease: checkOllamaRelease(release ?? ollamaReleases()[0]!, '--release').release };
}

/** `--rules` takes a rule set or a llama.cpp release tag. */
function rulesOf(value: string | undefined, engines: Engine[]): { rules?: LlamaCppRuleSet; release?: string } {
  if (value === undefined) return {};
  const isSet = (LLAMA_CPP_RULE_SETS as readonly string[]).includes(value);
  if (!isSet && parseRelease(value) === null) {
    throw new UsageError(
      choiceMessage('--rules', value, LLAMA_CPP_RULE_SETS, ', or a llama.cpp release like b4753 or v0.4.0'),
    );
  }
  // The rule generations are llama.cpp's; asking for them without llama.cpp is a mistake worth saying.
  if (!engines.includes('llama.cpp'))
    throw new UsageError(`--rules ${value} applies to llama.cpp only, but --engine is ${engines.join(', ')}`);
  return isSet ? { rules: value as LlamaCppRuleSet } : { release: value };
}

/** An MLX option, refused without MLX among the engines. */
function mlxOption(value: string | undefined, flag: string, engines: Engine[]): string | undefined {
  if (value !== undefined && !engines.includes('mlx'))
    throw new UsageError(`${flag} applies to MLX only, but --engine is ${engines.join(', ')}`);
  return value;
}

/** The rule sets, newest first, as the registry lists them; wrapped to the help's option column. */
function rulesList(): string {
  const names = [...LLAMA_CPP_RULE_SETS].reverse();
  const lines: string[] = [];
  let line = '';
  for (const name of names) {
    const next = line === '' ? name : `${line}, ${name}`;
    // The first line follows "llama.cpp rules (newest first): " (50 columns in), the others start at column 19.
    if (next.length > (lines.length === 0 ? 62 : 92) && line !== '') {
      lines.push(`${line},`);
      line = name;
    } else line = next;
  }
  return [...lines, line].join(`\n${' '.repeat(19)}`);
}

const command: Command = {
  help: () => `Usage: metal-cap-shim audit [--profile P] [--snapshot S] [--engine E] [--rules R]
                            [--release V] [--mlx-release V] [--mlx-arch NAME] [--force]
                            [--allow-above-hardware] [--json]

  ${profileHelp(17)}
  --snapshot S     audit a recorded snapshot offline (any OS); without it the profile is applied in this
                   process, verified and restored (macOS)
  --engine E       llama.cpp, mlx, ollama or all (default all: llama.cpp and mlx)
  --rules R        llama.cpp rules (newest first): ${rulesList()},
                   or a release (b4753, v0.4.0: docs/engines.md#release-names); default: the loaded
                   llama.cpp's (live), else current; llama.cpp only
  --release V      with --engine ollama: Ollama release V (${ollamaReleases().at(-1)} to ${ollamaReleases()[0]}), whose
                   llama.cpp and patches decide the rules; default ${ollamaReleases()[0]}
  --mlx-release V  MLX's rules for release V (v0.31.0 or 0.31.0); default the newest
  --mlx-arch NAME  offer MLX the architecture NAME (as MLX_METAL_GPU_ARCH) under the profile:
                   MLX's architecture-driven paths stock and offered
  --force          allow raising answers on a host that is not a VM
  --allow-above-hardware
                   allow a threadgroup memory claim the llama.cpp rules (--rules) would turn into a
                   request above every Apple GPU's 32768 bytes (refused otherwise; --force does not lift it)
  --json           machine-readable result (schema metal-cap-shim/audit@1)
Exit code 3 when the profile would be refused on that host (raising on bare metal, a request above every
Apple GPU's threadgroup memory), 1 when it does not verify.

${bundledSnapshotsHelp()}`,
  options: {
    profile: { type: 'string' },
    snapshot: { type: 'string' },
    engine: { type: 'string', choices: ENGINE_CHOICES },
    rules: { type: 'string' },
    release: { type: 'string' },
    'mlx-release': { type: 'string' },
    'mlx-arch': { type: 'string' },
    force: { type: 'boolean' },
    'allow-above-hardware': { type: 'boolean' },
    json: { type: 'boolean' },
  },
  run({ values }) {
    const engine = text(values, 'engine');
    const engines = engineList(engine);
    const ollama = ollamaOption(engine, text(values, 'release'), text(values, 'rules'));
    const rules = rulesOf(text(values, 'rules'), engines);
    const given = text(values, 'profile');
    const profile = resolveProfile(given !== undefined ? profileArgument(given) : DEFAULT_PROFILE);
    const snapshot = text(values, 'snapshot');
    const mlxRelease = mlxOption(text(values, 'mlx-release'), '--mlx-release', engines);
    const mlxArchitecture = mlxOption(text(values, 'mlx-arch'), '--mlx-arch', engines);
    if (mlxRelease !== undefined && parseMlxRelease(mlxRelease) === null) {
      throw new UsageError(`--mlx-release must be an MLX release like v0.31.0 or 0.31.0, got '${mlxRelease}'`);
    }
    const result = audit({
      profile,
      engines,
      ...rules,
      ...ollama,
      ...(mlxRelease !== undefined ? { mlxRelease } : {}),
      ...(mlxArchitecture !== undefined ? { mlxArchitecture } : {}),
      force: values.force === true,
      allowAboveHardware: values['allow-above-hardware'] === true,
      ...(snapshot !== undefined ? { snapshot } : {}),
    });
    if (values.json) printJson(result);
    else outText(formatAudit(result, styler()));
    if (result.refused) return EXIT.refused;
    return result.verdict.ok ? EXIT.ok : EXIT.finding;
  },
};

export default command;
