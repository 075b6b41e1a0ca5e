#!/usr/bin/env node
// Every generated part of the docs, from the code that holds its facts. It reads the built package, so run it after
// `npm run build`:
//
//   node scripts/check/docs.mjs           rewrites every generated region          (npm run docs)
//   node scripts/check/docs.mjs --check   exits 1 naming each stale file and the    (npm run docs:check;
//                                         command that regenerates it               test/repo/docs.test.ts)
//
// What is generated, and from what:
//   README.md         region commands        the commands `dist/cli.js --help` lists, one line each
//   docs/cli.md       region help            `dist/cli.js --help` and each command's `--help`
//                     exit:start … exit:end  EXIT_TABLE and EXEC_EXIT (scripts/check/exit-table.mjs)
//   docs/api.md       api:start … api:end    docs/api.json, checked against each entry's exports
//                                            (scripts/check/api-table.mjs)
//   docs/profiles.md  region profiles        `profiles` and DEFAULT_PROFILE (dist/index.js)
//   docs/engines.md   region rule-sets       LLAMA_CPP_RULE_SETS and LLAMA_CPP_RULE_SET_INFO (dist/tables.js): the
//                                            registry lib/engines/llama-cpp-releases.ts declares
//                     region mlx-rule-sets   MLX_RULE_SETS, MLX_RULE_SET_INFO and MLX_SWITCHES (dist/tables.js): the
//                                            registry lib/engines/mlx-releases.ts declares
//                     region mlx-rules       RULE_TABLES.mlx (dist/tables.js): lib/engines/mlx.ts's rules
//                     region ollama-releases OLLAMA_RELEASE_REGISTRY, OLLAMA_METAL_PATCHES and ollamaRelease
//                                            (dist/tables.js): the table lib/engines/ollama-releases.ts declares
//   docs/fleet.md     region matrix-sample   `report --json` on bundled snapshots, then `matrix`
// A region runs from `<!-- docs:start NAME … -->` to `<!-- docs:end NAME -->` (scripts/check/docs/regions.mjs).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { generateApiDoc } from './api-table.mjs';
import { replaceRegion } from './docs/regions.mjs';
import {
  renderCommands,
  renderHelp,
  renderMatrixSample,
  renderMlxRules,
  renderMlxRuleSets,
  renderOllamaReleases,
  renderProfiles,
  renderRuleSets,
} from './docs/render.mjs';
import { rewriteExitTable } from './exit-table.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The command that regenerates the docs, as the check names it. */
export const REGENERATE = 'npm run build && node scripts/check/docs.mjs';

/** Each generated region: its file, its name, and what renders it from the built package. */
function regions(dir, index, tables) {
  return [
    { file: 'README.md', name: 'commands', render: () => renderCommands(dir) },
    { file: 'docs/cli.md', name: 'help', render: () => renderHelp(dir) },
    {
      file: 'docs/profiles.md',
      name: 'profiles',
      render: () =>
        renderProfiles(
          index.profiles,
          index.DEFAULT_PROFILE,
          tables.aboveHardwareRuleSets,
          tables.LLAMA_CPP_RULE_SET_INFO,
        ),
    },
    {
      file: 'docs/engines.md',
      name: 'rule-sets',
      render: () => renderRuleSets(tables.LLAMA_CPP_RULE_SETS, tables.LLAMA_CPP_RULE_SET_INFO),
    },
    {
      file: 'docs/engines.md',
      name: 'mlx-rule-sets',
      render: () => renderMlxRuleSets(tables.MLX_RULE_SETS, tables.MLX_RULE_SET_INFO, tables.MLX_SWITCHES),
    },
    { file: 'docs/engines.md', name: 'mlx-rules', render: () => renderMlxRules(tables.RULE_TABLES.mlx) },
    {
      file: 'docs/engines.md',
      name: 'ollama-releases',
      render: () =>
        renderOllamaReleases(tables.OLLAMA_RELEASE_REGISTRY, tables.OLLAMA_METAL_PATCHES, tables.ollamaRelease),
    },
    { file: 'docs/fleet.md', name: 'matrix-sample', render: () => renderMatrixSample(dir) },
  ];
}

/**
 * Every file with generated parts, as it is (`current`) and as it should be (`generated`), and the problems that no
 * rewrite fixes (an export of the package with no row in docs/api.json, or a row naming no export).
 */
export async function generateDocs(dir = root) {
  for (const file of ['dist/cli.js', 'dist/index.js', 'dist/tables.js']) {
    if (!existsSync(path.join(dir, file))) throw new Error(`${file} is missing: run \`npm run build\` first`);
  }
  const index = await import(pathToFileURL(path.join(dir, 'dist', 'index.js')).href);
  const tables = await import(pathToFileURL(path.join(dir, 'dist', 'tables.js')).href);
  const files = new Map();
  const text = (file) => {
    if (!files.has(file)) {
      const current = readFileSync(path.join(dir, file), 'utf8');
      files.set(file, { current, generated: current });
    }
    return files.get(file);
  };
  for (const { file, name, render } of regions(dir, index, tables)) {
    const entry = text(file);
    entry.generated = replaceRegion(entry.generated, name, render(), file);
  }
  const cli = text('docs/cli.md');
  cli.generated = rewriteExitTable(cli.generated, tables.EXIT_TABLE, tables.EXEC_EXIT, 'docs/cli.md');
  const api = generateApiDoc(dir);
  text('docs/api.md').generated = api.generated;
  return { files, problems: api.problems };
}

/** One line per file whose generated parts are stale, naming the command that regenerates it. */
export function staleness(files) {
  return [...files]
    .filter(([, { current, generated }]) => current !== generated)
    .map(([file]) => `docs: ${file} is out of date with the code it is generated from; run \`${REGENERATE}\``);
}

async function main() {
  const check = process.argv.includes('--check');
  let result;
  try {
    result = await generateDocs();
  } catch (err) {
    console.error(`docs: ${err.message}`);
    process.exit(1);
  }
  const { files, problems } = result;
  for (const p of problems) console.error(`docs: ${p} (add its row to docs/api.json, then run \`${REGENERATE}\`)`);
  if (check) {
    const stale = staleness(files);
    for (const line of stale) console.error(line);
    if (stale.length === 0 && problems.length === 0) console.log(`docs: ${files.size} files up to date`);
    process.exit(stale.length > 0 || problems.length > 0 ? 1 : 0);
  }
  for (const [file, { current, generated }] of files) {
    if (generated !== current) writeFileSync(path.join(root, file), generated);
    console.log(`docs: ${file} ${generated === current ? 'already up to date' : 'rewritten'}`);
  }
  process.exit(problems.length > 0 ? 1 : 0);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
