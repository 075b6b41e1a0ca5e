#!/usr/bin/env node
// The TypeScript blocks (```ts) of README.md and docs/*.md, written out one module each so that tsc can check them
// against the package as built here and node-llama-cpp's types. scripts/check/check-examples.sh runs it into the
// examples' node_modules (where `metal-cap-shim` and `node-llama-cpp` resolve) and type-checks the result:
//
//   node scripts/check/docs/snippets.mjs OUT_DIR    writes OUT_DIR/<page>-<n>.mts and OUT_DIR/tsconfig.json
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** The Markdown files whose TypeScript blocks are checked, relative to the repository. */
export function documents(dir = root) {
  const docs = readdirSync(path.join(dir, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  return ['README.md', ...docs];
}

/** The ```ts blocks of a Markdown text, in order. */
export function tsBlocks(markdown) {
  return [...markdown.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
}

function main() {
  const out = process.argv[2];
  if (out === undefined) {
    console.error('usage: node scripts/check/docs/snippets.mjs OUT_DIR');
    process.exit(2);
  }
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const files = [];
  for (const doc of documents()) {
    const blocks = tsBlocks(readFileSync(path.join(root, doc), 'utf8'));
    blocks.forEach((code, i) => {
      const name = `${doc.replace(/\.md$/, '').replace(/[/.]/g, '-')}-${i + 1}.mts`;
      // Each block is a module of its own (top-level await, its own imports), named after where it comes from.
      writeFileSync(path.join(out, name), `// ${doc}, TypeScript block ${i + 1}\n${code}\nexport {};\n`);
      files.push(name);
    });
  }
  const tsconfig = {
    compilerOptions: {
      target: 'ES2022',
      lib: ['ES2022'],
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      strict: true,
      noUncheckedIndexedAccess: true,
      skipLibCheck: true,
      noEmit: true,
      types: ['node'],
    },
    files,
  };
  writeFileSync(path.join(out, 'tsconfig.json'), `${JSON.stringify(tsconfig, null, 2)}\n`);
  console.log(`   ${files.length} TypeScript blocks from ${documents().length} documents`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
