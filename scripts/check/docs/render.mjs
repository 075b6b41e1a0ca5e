// The generated parts of the docs, each rendered from what the built package (dist/) holds: the CLI's --help, the
// built-in profiles, the llama.cpp rule-set registry and a sample matrix. scripts/check/docs.mjs writes them into their
// regions; nothing here writes a file.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** The environment the CLI runs in for the docs: no colour, no simulated Metal, no profile from the caller's shell. */
export function cliEnv(env = process.env) {
  const clean = { ...env, NO_COLOR: '1' };
  for (const name of ['FORCE_COLOR', 'METAL_CAP_SHIM_SIM_SNAPSHOT', 'METAL_CAP_SHIM_PROFILE']) delete clean[name];
  return clean;
}

const outputs = new Map();

/**
 * What `node dist/cli.js ARGS` prints on stdout; an exit code other than 0 or anything on stderr is an error. Each
 * command line runs once per process.
 */
export function cliOutput(root, args) {
  const key = JSON.stringify([root, args]);
  if (!outputs.has(key)) outputs.set(key, runCli(root, args));
  return outputs.get(key);
}

function runCli(root, args) {
  const r = spawnSync(process.execPath, [path.join(root, 'dist', 'cli.js'), ...args], {
    cwd: root,
    encoding: 'utf8',
    env: cliEnv(),
  });
  if (r.error) throw r.error;
  if (r.status !== 0 || r.stderr !== '')
    throw new Error(`metal-cap-shim ${args.join(' ')} exited ${r.status}${r.stderr ? `: ${r.stderr.trim()}` : ''}`);
  return r.stdout;
}

/** The commands `--help` lists under "Commands:", in its order, each with its one-line summary. */
export function commandsOf(mainHelp) {
  const lines = mainHelp.split('\n');
  const at = lines.findIndex((l) => l.trim() === 'Commands:');
  if (at < 0) throw new Error('metal-cap-shim --help lists no "Commands:"');
  const commands = [];
  for (const line of lines.slice(at + 1)) {
    const m = /^ {2}(\S+) {2,}(\S.*)$/.exec(line);
    if (m === null) break;
    commands.push({ name: m[1], summary: m[2].trim() });
  }
  if (commands.length === 0) throw new Error('metal-cap-shim --help lists no command under "Commands:"');
  return commands;
}

/** GitHub's anchor for a Markdown heading: lower case, punctuation but `-` and `_` dropped, spaces as `-`. */
export function anchorOf(heading) {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The heading of a command's help in docs/cli.md. */
export function helpHeading(command) {
  return command === null ? 'metal-cap-shim --help' : `metal-cap-shim ${command} --help`;
}

function fenced(text) {
  return ['```text', text.replace(/\s+$/, ''), '```'].join('\n');
}

/** docs/cli.md's region `help`: the main --help, then each command's, as the CLI prints them. */
export function renderHelp(root) {
  const main = cliOutput(root, ['--help']);
  const parts = [`### ${helpHeading(null)}`, '', fenced(main)];
  for (const { name } of commandsOf(main))
    parts.push('', `### ${helpHeading(name)}`, '', fenced(cliOutput(root, [name, '--help'])));
  return parts.join('\n');
}

/** README.md's region `commands`: one row per command of `--help`, linking its help in docs/cli.md. */
export function renderCommands(root) {
  const rows = commandsOf(cliOutput(root, ['--help'])).map(
    ({ name, summary }) => `| [\`${name}\`](docs/cli.md#${anchorOf(helpHeading(name))}) | ${summary} |`,
  );
  return ['| command | what it does |', '|---|---|', ...rows].join('\n');
}

/** A table cell: `|` escaped, line breaks as spaces. */
function cell(text) {
  return String(text)
    .replace(/\|/g, '\\|')
    .replace(/\s*\n\s*/g, ' ');
}

/** An Apple GPU family value as its name: 1009 is Apple9. */
function familyName(value) {
  return value >= 1001 && value <= 1099 ? `Apple${value - 1000}` : String(value);
}

/** What a built-in profile answers, in words, from its fields. */
export function profileAnswers(p) {
  const parts = [p.mode];
  if (p.appleFamilyMax === 'host') parts.push('the host chip’s true Apple family');
  else if (p.appleFamilyMax !== null)
    parts.push(p.mode === 'exact' ? `Apple1–${familyName(p.appleFamilyMax)}` : familyName(p.appleFamilyMax));
  parts.push(
    p.maxThreadgroupMemoryLength === null
      ? 'threadgroup memory as answered'
      : `threadgroup memory ${p.maxThreadgroupMemoryLength}`,
  );
  if (p.recommendedMaxWorkingSetSize !== null) parts.push(`working set ${p.recommendedMaxWorkingSetSize}`);
  if (p.deviceName === 'host') parts.push('the host chip’s name');
  else if (p.deviceName !== null) parts.push(`name "${p.deviceName}"`);
  const families = Object.entries(p.families);
  if (families.length > 0) {
    const no = families.filter(([, v]) => v === false).map(([k]) => k);
    const yes = families.filter(([, v]) => v === true).map(([k]) => k);
    if (no.length > 0) parts.push(`${no.join(', ')} NO`);
    if (yes.length > 0) parts.push(`${yes.join(', ')} YES`);
  }
  if (p.mlxArchitecture === 'host') parts.push('the host chip’s GPU architecture offered to MLX');
  else if (p.mlxArchitecture !== undefined) parts.push(`${p.mlxArchitecture} offered to MLX`);
  return parts.join(', ');
}

/** docs/profiles.md's region `profiles`: the built-in profiles table and each one's reasons (dist/index.js). */
export function renderProfiles(profiles, defaultName, refusedFor = () => [], ruleSetInfo = {}) {
  const list = Object.values(profiles);
  const refusedText = (b) => {
    const sets = refusedFor(b.profile);
    if (sets.length === 0) return 'for no llama.cpp release.';
    return `for llama.cpp ${sets.map((r) => `\`${r}\` (${ruleSetInfo[r].releases})`).join(', ')}: that release would ask for more threadgroup memory than any Apple GPU has (\`--allow-above-hardware\` applies it anyway).`;
  };
  const rows = list.map(
    (b) =>
      `| [\`${b.name}\`](#${anchorOf(b.name)})${b.name === defaultName ? ' (default)' : ''} | ${cell(profileAnswers(b.profile))} | ${cell(b.summary)} |`,
  );
  const parts = ['| profile | answers | summary |', '|---|---|---|', ...rows];
  for (const b of list) {
    parts.push('', `### ${b.name}`, '');
    if (b.name === defaultName) parts.push('The default: applied when no profile is named (`DEFAULT_PROFILE`).', '');
    parts.push(`- **Answers:** ${profileAnswers(b.profile)}.`);
    if (b.fallback !== undefined)
      parts.push(
        `- **Where the host’s chip is unknown:** \`${b.fallback}\`, with one \`host-unknown-fallback\` warning.`,
      );
    parts.push(`- **Why:** ${b.rationale}`, `- **Source:** ${b.source}`, `- **Risks:** ${b.risks}`);
    parts.push(`- **Refused on a stock guest:** ${refusedText(b)}`);
  }
  return parts.join('\n');
}

/** A rule set's first release: `b6673`, `v0.4.0`, or "the first" for build 0. */
function firstRelease(first) {
  if ('version' in first) return `v${first.version.join('.')}`;
  return first.build === 0 ? '—' : `b${first.build}`;
}

/** The commit and pull request that open a rule set, as cited in its row: `0320ac5, #15995`, or — for none. */
function opened(citation) {
  const parts = [citation.commit, citation.pr].filter((p) => p !== null);
  return parts.length === 0 ? '—' : parts.join(', ');
}

/** docs/engines.md's region `rule-sets`: the llama.cpp rule sets, oldest first (dist/tables.js). */
export function renderRuleSets(ruleSets, info) {
  const rows = ruleSets.map((id) => {
    const r = info[id];
    return `| \`${r.id}\` | ${firstRelease(r.first)} | ${opened(r.opened)} | ${cell(r.releases)} | \`${r.source}\` | ${cell(r.summary)} | \`${r.threadgroup}\` | ${cell(r.evidence.join('; '))} |`;
  });
  return [
    '| rule set | from | opened by | releases | computed in | what sets it apart | [threadgroup memory](#threadgroup-memory) | checked against llama.cpp’s own code |',
    '|---|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

/** docs/engines.md's region `mlx-rule-sets`: the MLX rule sets, oldest first, each with the switches it reads. */
export function renderMlxRuleSets(ruleSets, info, switches) {
  const reads = (id) => {
    const at = ruleSets.indexOf(id);
    return switches.filter((s) => ruleSets.indexOf(s.since) <= at).map((s) => `\`${s.name}\``);
  };
  const rows = ruleSets.map((id) => {
    const r = info[id];
    return `| \`${r.id}\` | ${cell(r.releases)} | ${cell(r.summary)} | ${reads(id).join(', ')} | ${cell(r.evidence.join('; '))} |`;
  });
  return [
    '| rule set | releases | what sets it apart | switches read | read in MLX’s source |',
    '|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

/** docs/engines.md's region `mlx-rules`: each value MLX computes, where, from which rule set, and how it changed. */
export function renderMlxRules(rules) {
  const rows = rules.map((r) => {
    const changes = r.changes.map((c) => `from ${c.from}: ${c.what}`).join('; ');
    return `| \`${r.flag}\`${r.byArchitecture ? ' (A)' : ''} | ${r.since} | \`${r.source}\` | ${cell(r.rule)}${changes === '' ? '' : ` (${cell(changes)})`} |`;
  });
  return ['| value | from | computed in | rule (changes) |', '|---|---|---|---|', ...rows].join('\n');
}

/** The reports of the sample matrix: `report` arguments, each on a bundled snapshot (offline, any OS). */
export const SAMPLE_REPORTS = [
  ['guest.json', ['--snapshot', 'vz-guest-m1-ultra-tahoe-stock', '--host-label', 'M1 Ultra, macOS 26.6.1']],
  [
    'guest-cua.json',
    [
      '--snapshot',
      'vz-guest-m1-ultra-tahoe-stock',
      '--host-label',
      'M1 Ultra, macOS 26.6.1',
      '--profile',
      'cua-release',
    ],
  ],
  ['host.json', ['--snapshot', 'm1-ultra-bare-metal']],
  ['host-cua.json', ['--snapshot', 'm1-ultra-bare-metal', '--profile', 'cua-release']],
];

function shellWord(word) {
  return /^[\w./=-]+$/.test(word) ? word : `"${word}"`;
}

/** docs/fleet.md's region `matrix-sample`: four offline reports and the table `matrix` prints for them. */
export function renderMatrixSample(root) {
  const dir = mkdtempSync(path.join(tmpdir(), 'mcs-docs-matrix-'));
  try {
    const commands = [];
    for (const [file, args] of SAMPLE_REPORTS) {
      writeFileSync(path.join(dir, file), cliOutput(root, ['report', '--json', ...args]));
      commands.push(`metal-cap-shim report --json ${args.map(shellWord).join(' ')} > reports/${file}`);
    }
    const table = cliOutput(
      root,
      // In the order the shell expands reports/*.json.
      [
        'matrix',
        ...SAMPLE_REPORTS.map(([file]) => file)
          .sort()
          .map((file) => path.join(dir, file)),
      ],
    ).replace(/\s+$/, '');
    return ['```sh', ...commands, 'metal-cap-shim matrix reports/*.json', '```', '', table].join('\n');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Releases (newest first) as spans of consecutive ones: `v0.12.0 to v0.12.10, v0.13.2`. */
function releaseSpans(releases, carried) {
  const spans = [];
  let open = null;
  for (const release of [...releases].reverse()) {
    if (carried(release)) {
      if (open === null) {
        open = [release, release];
        spans.push(open);
      } else open[1] = release;
    } else open = null;
  }
  return spans.map(([a, b]) => (a === b ? a : `${a} to ${b}`)).join(', ');
}

/**
 * docs/engines.md's region `ollama-releases`: Ollama's releases, newest first, the consecutive ones that build the
 * same llama.cpp with the same ggml-metal patches in one row; then each patch, what it changes and which releases
 * carry it.
 */
export function renderOllamaReleases(registry, patches, ollamaRelease) {
  const groups = [];
  for (const row of registry) {
    const o = ollamaRelease(row.release);
    const key = JSON.stringify([row.pin.file, row.pin.fetchHead ?? null, o.ruleSet, row.metalPatches]);
    const last = groups.at(-1);
    if (last !== undefined && last.key === key) last.rows.push({ row, o });
    else groups.push({ key, rows: [{ row, o }] });
  }
  const built = ({ row, o }) =>
    row.pin.file === 'LLAMA_CPP_VERSION'
      ? o.llamaCpp.release
      : `${o.llamaCpp.commit.slice(0, 9)} (b${o.llamaCpp.builds[0]} to b${o.llamaCpp.builds[1]})`;
  const rows = groups.map(({ rows: members }) => {
    const newest = members[0].row.release;
    const oldest = members.at(-1).row.release;
    const { o } = members[0];
    const gating = o.metalPatches.filter((p) => p.opGates.length > 0).map((p) => `\`${p.name}\``);
    const count = o.metalPatches.length;
    const patchCell =
      count === 0 ? 'none' : `${count}${gating.length === 0 ? '' : `; sets a gate: ${gating.join(', ')}`}`;
    return `| ${newest === oldest ? newest : `${oldest} to ${newest}`} | ${[...new Set(members.map(built).reverse())].join(', ')} | \`${members[0].row.pin.file}\` | \`${o.ruleSet}\` | ${patchCell} |`;
  });
  const releases = registry.map((r) => r.release);
  const carriedBy = (name) => (release) => registry.find((r) => r.release === release).metalPatches.includes(name);
  const patchRows = Object.entries(patches).map(
    ([name, p]) =>
      `| \`${name}\` | ${releaseSpans(releases, carriedBy(name))} | ${p.files.map((f) => `\`${f}\``).join(', ')} | ${cell(p.summary)} | ${p.opGates.length === 0 ? 'none' : p.opGates.map((g) => `\`${g.op}\` on ${g.needs === null ? 'no flag' : `\`${g.needs}\``}`).join(', ')} |`,
  );
  return [
    '| Ollama releases | llama.cpp | pinned in | rule set | patches touching ggml-metal |',
    '|---|---|---|---|---|',
    ...rows,
    '',
    '| patch | carried by | ggml-metal files | what it changes for a prediction | gate it sets |',
    '|---|---|---|---|---|',
    ...patchRows,
  ].join('\n');
}
