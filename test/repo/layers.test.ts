// lib/'s folders are layers, and an import goes down only: every relative import and export-from specifier of every
// lib/**/*.ts (type-only ones included) is read from the source, and no file may reach a layer above its own or a
// folder beside it at the same height. CONTRIBUTING.md ("Layout") names the layers.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { root } from '../support/helpers.js';

/** Each folder's height: a file may import its own folder and any lower height, nothing else. */
const LAYERS: Readonly<Record<string, number>> = Object.freeze({
  core: 0,
  device: 1,
  engines: 2,
  patch: 3,
  exec: 4,
  doctor: 4,
  select: 5,
  bench: 5,
  audit: 6,
  format: 7,
  cli: 8,
  // lib/index.ts, lib/register.ts: the package's entry points (tsup's entries; the CLI's is lib/cli/main.ts).
  '.': 9,
});

const libDir = path.join(root, 'lib');

/** The specifiers a TypeScript source imports or re-exports: static, type-only and dynamic `import()`. */
function specifiersOf(source: string): string[] {
  const found: string[] = [];
  for (const m of source.matchAll(/^\s*(?:import|export)\b[^;'"]*?\bfrom\s*['"]([^'"]+)['"]/gm)) found.push(m[1]!);
  for (const m of source.matchAll(/^\s*import\s*['"]([^'"]+)['"]/gm)) found.push(m[1]!);
  for (const m of source.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) found.push(m[1]!);
  return found;
}

/** Every lib/ file (relative to lib/) and the lib/ files it imports. */
function importGraph(sources: ReadonlyMap<string, string>): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const [file, source] of sources) {
    const targets = specifiersOf(source)
      .filter((s) => s.startsWith('.'))
      .map((s) => path.posix.normalize(path.posix.join(path.posix.dirname(file), s)).replace(/\.js$/, '.ts'))
      .filter((t) => !t.startsWith('..'));
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

const layerOf = (file: string): string => (file.includes('/') ? file.slice(0, file.indexOf('/')) : '.');

/** Imports against the layer order, as `from -> to`. */
function upwardImports(graph: ReadonlyMap<string, string[]>): string[] {
  const bad: string[] = [];
  for (const [from, targets] of graph) {
    for (const to of targets) {
      const a = layerOf(from);
      const b = layerOf(to);
      if (a === b) continue;
      if (!(a in LAYERS) || !(b in LAYERS) || LAYERS[b]! >= LAYERS[a]!) bad.push(`${from} -> ${to}`);
    }
  }
  return bad.sort();
}

/** One cycle of the graph as a path of files (first = last), or null when it has none. */
function findCycle(graph: ReadonlyMap<string, string[]>): string[] | null {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (file: string): string[] | null => {
    state.set(file, 'open');
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'open') return [...stack.slice(stack.indexOf(next)), next];
      if (state.get(next) === undefined) {
        const found = visit(next);
        if (found !== null) return found;
      }
    }
    stack.pop();
    state.set(file, 'done');
    return null;
  };
  for (const file of [...graph.keys()].sort()) {
    if (state.get(file) !== undefined) continue;
    const found = visit(file);
    if (found !== null) return found;
  }
  return null;
}

function libSources(): Map<string, string> {
  const files = readdirSync(libDir, { recursive: true, encoding: 'utf8' })
    .map((f) => f.split(path.sep).join('/'))
    .filter((f) => f.endsWith('.ts'))
    .sort();
  return new Map(files.map((f) => [f, readFileSync(path.join(libDir, f), 'utf8')]));
}

describe('lib/ imports go down the layers', () => {
  const sources = libSources();
  const graph = importGraph(sources);

  it('every file of lib/ sits in a known layer', () => {
    expect([...new Set([...sources.keys()].map(layerOf))].filter((l) => !(l in LAYERS))).toEqual([]);
  });

  it('no import reaches a layer above its own or a folder beside it', () => {
    expect(upwardImports(graph)).toEqual([]);
  });

  it('the import graph has no cycle', () => {
    expect(findCycle(graph)).toBeNull();
  });

  it('the check reads lib/ for real: the graph holds the imports of a file known to have them', () => {
    expect(graph.get('cli/audit.ts')).toContain('audit/audit.ts');
    expect(graph.get('index.ts')).toContain('select/auto.ts');
  });

  it('a planted import against the order is found: core/errors.ts importing the CLI', () => {
    const planted = new Map(sources);
    planted.set('core/errors.ts', `import type { Styler } from '../format/text.js';\n${sources.get('core/errors.ts')}`);
    expect(upwardImports(importGraph(planted))).toEqual(['core/errors.ts -> format/text.ts']);
  });

  it('a planted import between folders at the same height is found: exec/ importing doctor/', () => {
    const planted = new Map(sources);
    planted.set('exec/run.ts', `${sources.get('exec/run.ts')}\nexport { doctor } from '../doctor/index.js';\n`);
    expect(upwardImports(importGraph(planted))).toEqual(['exec/run.ts -> doctor/index.ts']);
  });

  it('a planted cycle inside one folder is found (two files of core/ importing each other)', () => {
    const planted = new Map(sources);
    planted.set('core/words.ts', `import { QUOTE_LIMIT } from './input.js';\n${sources.get('core/words.ts')}`);
    planted.set('core/input.ts', `import { plural } from './words.js';\n${sources.get('core/input.ts')}`);
    expect(findCycle(importGraph(planted))).toEqual(['core/input.ts', 'core/words.ts', 'core/input.ts']);
  });
});
