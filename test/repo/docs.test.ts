// The docs held to the code. The generated parts (README's command table, docs/cli.md's help and exit codes,
// docs/api.md's tables, docs/profiles.md, docs/engines.md's rule sets, docs/fleet.md's sample matrix) are what
// scripts/check/docs.mjs writes, and a stale one fails naming the command that regenerates it. Every relative link and
// anchor resolves, and what the README links ships in the package. The README keeps its order and length, every
// docs/ page says who it is for, and no page narrates history. The commands a user follows without a Mac run as
// written, the install notes cover npm 11's allowScripts warning, and the hand-written tables that restate a lib/
// table (doctor's probes, the warnings, the error example) match it.
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { DOCTOR_PROBE_IDS } from '../../lib/device/doctor-vocabulary.js';
import { audit } from '../../lib/index.js';
import { APPLY_WARNING_CODES } from '../../lib/patch/plan.js';
import { buildConsumer, cli, describeSim, dist, requireSimBuild, root, thrown } from '../support/helpers.js';

const read = (file: string) => readFileSync(path.join(root, file), 'utf8');
const readme = read('README.md');
const contributing = read('CONTRIBUTING.md');
const DOC_PAGES = readdirSync(path.join(root, 'docs'))
  .filter((f) => f.endsWith('.md'))
  .sort()
  .map((f) => `docs/${f}`);
const PAGES = ['README.md', 'CONTRIBUTING.md', ...DOC_PAGES];
const REGENERATE = 'npm run build && node scripts/check/docs.mjs';

interface DocsScript {
  REGENERATE: string;
  staleness(files: Map<string, { current: string; generated: string }>): string[];
}
const docsScript = (await import(path.join(root, 'scripts', 'check', 'docs.mjs'))) as DocsScript;
const { anchorOf } = (await import(path.join(root, 'scripts', 'check', 'docs', 'render.mjs'))) as {
  anchorOf(heading: string): string;
};

/** The text of a `## ` section of a Markdown document, up to the next one. */
function section(text: string, title: string): string {
  const start = text.indexOf(`\n## ${title}\n`);
  expect(start, `no section "${title}"`).toBeGreaterThan(-1);
  const end = text.indexOf('\n## ', start + 1);
  return text.slice(start, end === -1 ? undefined : end);
}

/** The `## ` headings of a document, in order. */
function h2(text: string): string[] {
  return [...text.matchAll(/^## (.+)$/gm)].map((m) => m[1]!);
}

/** Each command of the ```sh blocks with the exit code its comment gives (`# exit 1: …`), 0 by default. */
function shellCommands(text: string): { line: string; exit: number }[] {
  return [...text.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) =>
    m[1]!
      .split('\n')
      .map((raw) => ({
        line: raw.replace(/\s+#.*$/, '').trim(),
        exit: Number(/#\s*exit (\d+)/.exec(raw)?.[1] ?? 0),
      }))
      .filter((c) => c.line !== ''),
  );
}

/** The Markdown text outside fenced code blocks (links and headings in code are not links and headings). */
function prose(text: string): string {
  return text.replace(/^```[\s\S]*?^```$/gm, '');
}

/** GitHub's anchors of a document's headings, duplicates numbered as GitHub numbers them. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of prose(text).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = anchorOf(m[1]!.replace(/`/g, ''));
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** The relative links of a Markdown document: [text](target), not URLs, not in code blocks. */
function relativeLinks(text: string): string[] {
  return [...prose(text).matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((t) => !/^[a-z]+:/i.test(t));
}

/** Whether package.json's `files` (and npm's own rules) put a repository file into the tarball. */
function ships(file: string): boolean {
  if (['README.md', 'LICENSE', 'package.json'].includes(file)) return true;
  const patterns = (JSON.parse(read('package.json')) as { files: string[] }).files;
  const matches = (pattern: string) => {
    const re = new RegExp(
      `^${pattern
        .replace(/[.+^${}()|[\]\\]/g, '\\$&')
        .replace(/\*/g, '[^/]*')
        .replace(/\?/g, '[^/]')}(?:/.*)?$`,
    );
    return re.test(file);
  };
  const included = patterns.filter((p) => !p.startsWith('!')).some(matches);
  const excluded = patterns.filter((p) => p.startsWith('!')).some((p) => matches(p.slice(1)));
  return included && !excluded;
}

/** Output with its measured numbers (times, tokens per second) reduced to their shape: `12.3 t/s` → `#.# t/s`. */
function measuredShape(text: string): string {
  return text.replace(/\d+(?:\.\d+)?(?= ?(?:t\/s|ms|s)\b)/g, (n) => n.replace(/\d+/g, '#'));
}

/** The pasted runs of a page: each `$ ` line of its text blocks, with the output shown under it. */
function pastedRuns(text: string): { line: string; output: string }[] {
  return [...text.matchAll(/```text\n([\s\S]*?)```/g)]
    .flatMap((m) => m[1]!.split(/^\$ /m).slice(1))
    .map((run) => {
      const [line, ...output] = run.split('\n');
      return { line: line!, output: output.join('\n') };
    });
}

/** A folder to run documented commands in: `metal-cap-shim` on PATH, and `dist` and `build` as a checkout has them. */
function sandbox(): { cwd: string; env: NodeJS.ProcessEnv } {
  const cwd = mkdtempSync(path.join(tmpdir(), 'mcs-docs-'));
  const bin = path.join(cwd, '.bin');
  mkdirSync(bin);
  writeFileSync(path.join(bin, 'metal-cap-shim'), `#!/bin/sh\nexec '${process.execPath}' '${cli}' "$@"\n`);
  chmodSync(path.join(bin, 'metal-cap-shim'), 0o755);
  symlinkSync(dist, path.join(cwd, 'dist'));
  symlinkSync(path.join(root, 'build'), path.join(cwd, 'build'));
  const {
    METAL_CAP_SHIM_SIM_SNAPSHOT: _sim,
    METAL_CAP_SHIM_PROFILE: _profile,
    FORCE_COLOR: _color,
    ...env
  } = process.env;
  return {
    cwd,
    env: { ...env, NO_COLOR: '1', PATH: `${bin}:${path.dirname(process.execPath)}:${process.env.PATH ?? ''}` },
  };
}

function run(line: string, where: { cwd: string; env: NodeJS.ProcessEnv }) {
  return spawnSync('sh', ['-c', line.replace(/^npx metal-cap-shim /, 'metal-cap-shim ')], {
    ...where,
    encoding: 'utf8',
    timeout: 60_000,
  });
}

describe('generated docs (scripts/check/docs.mjs)', () => {
  it(`are what the code generates (else: ${REGENERATE})`, () => {
    const r = spawnSync(process.execPath, [path.join(root, 'scripts', 'check', 'docs.mjs'), '--check'], {
      cwd: root,
      encoding: 'utf8',
    });
    expect([r.status, r.stderr]).toEqual([0, '']);
  });

  it('a stale file is named with the command that regenerates it', () => {
    const files = new Map([
      ['docs/cli.md', { current: 'old', generated: 'new' }],
      ['docs/api.md', { current: 'same', generated: 'same' }],
    ]);
    expect(docsScript.REGENERATE).toBe(REGENERATE);
    expect(docsScript.staleness(files)).toEqual([
      `docs: docs/cli.md is out of date with the code it is generated from; run \`${REGENERATE}\``,
    ]);
  });

  it('scripts/check/exit-table.mjs --check and scripts/check/api-table.mjs --check pass on their own', () => {
    for (const script of ['exit-table.mjs', 'api-table.mjs']) {
      const r = spawnSync(process.execPath, [path.join(root, 'scripts', 'check', script), '--check'], {
        encoding: 'utf8',
      });
      expect([script, r.status, r.stderr]).toEqual([script, 0, '']);
    }
  });

  it('package.json runs them as npm run docs and npm run docs:check', () => {
    const { scripts } = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
    expect([scripts.docs, scripts['docs:check']]).toEqual([
      'node scripts/check/docs.mjs',
      'node scripts/check/docs.mjs --check',
    ]);
  });
});

describe('README: the first screen', () => {
  it('is at most 250 lines', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(250);
  });

  it('opens with the two commands CI and users run, exactly', () => {
    const first = /```sh\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(first).toBe(
      [
        'npm ci && npm run build && node dist/cli.js audit --snapshot vz-guest-m1-ultra-tahoe-stock   # main job: offline audit',
        'bash scripts/test.sh                                                                         # the tests',
        '',
      ].join('\n'),
    );
    expect(readme.indexOf('```sh')).toBeLessThan(readme.indexOf('\n## '));
  });

  it('keeps its order: why, status and limits, install, use, the CLI, the docs', () => {
    expect(h2(readme)).toEqual([
      'What it does, and why',
      'Status and limits',
      'Install',
      'Use',
      'The CLI at a glance',
      'Documentation',
      'Projects the docs cite',
    ]);
  });

  it('its first 25 lines say what it is, for whom, how far it has been tried, what the two commands cost, and where reports go', () => {
    const top = readme.split('\n').slice(0, 25).join('\n').replace(/\s+/g, ' ');
    const phrases = [
      'Metal',
      'in macOS virtual machines',
      'for anyone who runs models in a macOS guest',
      'not published to npm',
      'never run on a real Mac',
      'npm pack',
      'npm install ./metal-cap-shim-0.1.0.tgz',
      'node dist/cli.js audit --snapshot vz-guest-m1-ultra-tahoe-stock',
      'bash scripts/test.sh',
      'needs Node 20.12+ on any OS',
      'the audit itself 0.4 s',
      'need Debian or Ubuntu, root',
      'GB of disk',
      'min or more cold',
      'min warm',
      'send `report.json` to whoever gave you the package',
    ];
    expect(phrases.filter((p) => !top.includes(p))).toEqual([]);
    // The status comes before the commands; the two commands' costs right after them.
    expect(top.indexOf('not published to npm')).toBeLessThan(top.indexOf('```sh'));
  });

  it('names every apt package the test command installs', () => {
    const script = read('scripts/test.sh');
    const extra = [...script.matchAll(/need\+=\(([\w.+-]+)\)/g)].map((m) => m[1]!);
    const sim = [...read('scripts/build/sim-toolchain.mjs').matchAll(/package: '([\w.+-]+)'/g)].map((m) => m[1]!);
    expect(extra.length).toBeGreaterThan(5);
    expect(sim.length).toBeGreaterThan(5);
    const listed = section(readme, 'Install');
    expect(
      [...sim, ...extra].filter((pkg) => !new RegExp(`\\b${pkg.replace(/[.+]/g, '\\$&')}\\b`).test(listed)),
    ).toEqual([]);
  });

  it('links every project, pull request and issue the docs cite, from one list', () => {
    const cited = section(readme, 'Projects the docs cite');
    const pages = [...PAGES, 'snapshots/README.md'].map(read).join('\n');
    const missing: string[] = [];
    // `owner/name PR 12`, `owner/name#12`, `owner/name issue 12`, `owner/name commit`: a citation of another project.
    for (const m of pages.matchAll(/\b([\w-]+\/[\w.-]*\w)(?: PR (\d+)|#(\d+)| issues? (\d+)|,? commit)/g)) {
      const [, repo, pr, issue, issue2] = m;
      const want = pr
        ? `https://github.com/${repo}/pull/${pr}`
        : issue || issue2
          ? `https://github.com/${repo}/issues/${issue ?? issue2}`
          : `https://github.com/${repo}`;
      if (!cited.includes(`(${want})`)) missing.push(`${m[0]} → ${want}`);
    }
    // llama.cpp's own pull requests are cited by number alone.
    for (const m of pages.matchAll(/\bllama\.cpp #(\d+)/g)) {
      const want = `https://github.com/ggml-org/llama.cpp/pull/${m[1]}`;
      if (!cited.includes(`(${want})`)) missing.push(`${m[0]} → ${want}`);
    }
    expect([...new Set(missing)]).toEqual([]);
    expect(cited).toContain('[trycua/cua PR 3070](https://github.com/trycua/cua/pull/3070)');
  });

  it('runs the CLI one way: npx metal-cap-shim, or node dist/cli.js in a clone; never a bare metal-cap-shim, which is not on PATH', () => {
    const bare = shellCommands(readme)
      .map((c) => c.line)
      .filter((line) => /^metal-cap-shim\b/.test(line));
    expect(bare).toEqual([]);
    expect(shellCommands(readme).filter((c) => c.line.startsWith('npx metal-cap-shim ')).length).toBeGreaterThan(8);
  });

  it('says first that it is not on npm and has never run on a Mac, and what to run first on one', () => {
    const status = section(readme, 'Status and limits');
    expect(status).toContain('Not yet published to npm');
    expect(status).toContain('Nothing of it has run on a real Mac yet');
    const first = shellCommands(status).map((c) => c.line.split(/\s+/).slice(0, 3).join(' '));
    expect(first).toEqual(['npx metal-cap-shim probe', 'npx metal-cap-shim doctor', 'npx metal-cap-shim report']);
    expect(status).toMatch(/report --json .*> report\.json/);
    expect(section(readme, 'Install')).toContain('npm pack');
  });

  it('the install notes say what npm 11’s allowScripts warning is, that it applies everywhere, and how to answer it', () => {
    const install = section(readme, 'Install');
    expect(install).toMatch(/npm 11, on every OS,/);
    expect(install).toContain('not yet covered by allowScripts');
    expect(install).toContain('npm install-scripts approve metal-cap-shim');
    expect(install).toContain('npm install-scripts deny metal-cap-shim');
  });

  it('the install notes say what a fresh macOS guest needs, and what the install says without it', () => {
    const install = section(readme, 'Install');
    const { noAddonLine } = createRequire(import.meta.url)(path.join(root, 'scripts', 'build', 'install.cjs')) as {
      noAddonLine(hasTools: boolean): string;
    };
    const said = noAddonLine(false);
    for (const step of ['xcode-select --install', 'npm rebuild metal-cap-shim']) {
      expect(said).toContain(`\`${step}\``);
      expect(install).toContain(`\`${step}\``);
    }
    expect(install.replace(/\s+/g, ' ')).toContain(
      "fresh macOS guest needs Node 20.12+ and, for that build, Xcode's Command Line Tools",
    );
    expect(install).toContain('ERR_NATIVE_UNAVAILABLE');
  });

  it('links every docs/ page', () => {
    const linked = new Set(relativeLinks(readme));
    expect(DOC_PAGES.filter((p) => !linked.has(p))).toEqual([]);
  });
});

describe('CONTRIBUTING.md', () => {
  it('is at most about 2,500 words', () => {
    expect(contributing.split(/\s+/).filter(Boolean).length).toBeLessThanOrEqual(2500);
  });

  it('gives the loop first, then the recipes in the order a newcomer needs them', () => {
    expect(h2(contributing)).toEqual(['The loop', 'Layout', 'Recipes']);
    const recipes = [...contributing.matchAll(/^### (.+)$/gm)].map((m) => m[1]);
    expect(recipes.slice(0, 6)).toEqual([
      'A new Metal property',
      'A new llama.cpp release or rule set',
      'A new profile',
      'A new doctor probe',
      'A new CLI command',
      'A new snapshot',
    ]);
    const loop = section(contributing, 'The loop');
    for (const step of [
      'npm run build',
      'bash scripts/test.sh',
      'npm run build:sim',
      'MACOS_SDK=<dir> node ../shared/tools/macos-cross-build.mjs',
      'npm run lint',
      'npm run format',
    ])
      expect(loop).toContain(step);
  });
});

describe('every page', () => {
  it.each(DOC_PAGES)('%s opens with one line saying who it is for', (page) => {
    const lines = read(page).split('\n');
    expect(lines[0]).toMatch(/^# /);
    expect(lines[1]).toBe('');
    expect(lines[2]).toMatch(/^For /);
  });

  it('narrates no history (docs/measurements.md keeps its dated runs)', () => {
    const narration = /before the change|\bissues? \d+|issues were silent|measured when it was/i;
    const found = PAGES.filter((p) => p !== 'docs/measurements.md').flatMap((p) =>
      read(p)
        .split('\n')
        .filter((l) => narration.test(l))
        .map((l) => `${p}: ${l.trim()}`),
    );
    expect(found).toEqual([]);
  });

  it("no project file names the issue that asked for it (docs/measurements.md keeps its dated runs); another project's issue is cited as owner/name issue N", () => {
    // The tracked files; in Stryker's sandbox (build/stryker-tmp/sandbox-*, inside the checkout but ignored by it, so
    // git lists nothing there), a walk of the tree without what is built or installed.
    const top = spawnSync('git', ['rev-parse', '--show-toplevel'], { cwd: root, encoding: 'utf8' });
    const checkout = top.status === 0 && path.resolve(top.stdout.trim()) === path.resolve(root);
    const listed = checkout
      ? spawnSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' })
      : { status: 1, stdout: '' };
    const topSkipped = new Set(['build', 'dist', 'coverage', 'reports']);
    const walk = (dir: string): string[] =>
      readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((e) => {
        const rel = dir === '' ? e.name : `${dir}/${e.name}`;
        if (!e.isDirectory()) return e.isFile() ? [rel] : [];
        const skip = ['node_modules', '.git'].includes(e.name) || (dir === '' && topSkipped.has(e.name));
        return skip ? [] : walk(rel);
      });
    const files = listed.status === 0 ? listed.stdout.split('\0').filter(Boolean) : walk('');
    const tracked = files
      .filter((f) => /\.(ts|mts|cts|mjs|cjs|js|mm|m|c|cpp|h|sh|ya?ml|json|md|gyp)$|^\.ci\/run$/.test(f))
      .filter((f) => f !== 'docs/measurements.md' && !f.endsWith('package-lock.json'))
      .filter((f) => existsSync(path.join(root, f)));
    expect(tracked.length).toBeGreaterThan(200);
    expect(tracked).toContain('scripts/build/node-versions.mjs');
    expect(tracked).toContain('binding.gyp');
    // "ml-explore/mlx issue 3885", "actions/runner-images issue 10663": a citation, which stays. GitHub owners have no
    // dots. The word followed by a number (after a space, a '#' or a '-') is otherwise the project's own.
    const own = /(?<![\w-]+\/[\w.-]+ )\bissues?[ #-]+\d+/i;
    const found = tracked.flatMap((f) =>
      readFileSync(path.join(root, f), 'utf8')
        .split('\n')
        .filter((l) => own.test(l))
        .map((l) => `${f}: ${l.trim()}`),
    );
    expect(found).toEqual([]);
  });

  // docs/simulation.md's runs need the simulated build (below); docs/bench.md's need llama.cpp's tools and a model.
  const offlinePages = DOC_PAGES.filter((p) => !['docs/simulation.md', 'docs/bench.md'].includes(p));
  it('the pasted runs (`$ npx metal-cap-shim …` in a text block) print what the page shows, measured numbers by shape', () => {
    const runs = offlinePages.flatMap((page) => pastedRuns(read(page)).map((r) => ({ page, ...r })));
    expect(runs.map((r) => r.page)).toContain('docs/cli.md');
    const where = sandbox();
    for (const { page, line, output } of runs) {
      expect(line, `${page}: a pasted run is an npx metal-cap-shim command`).toMatch(/^npx metal-cap-shim /);
      const r = run(line, where);
      expect([page, line, r.status, measuredShape(r.stdout), r.stderr]).toEqual([
        page,
        line,
        0,
        measuredShape(output),
        '',
      ]);
    }
  });

  it('measured numbers are compared by their shape only', () => {
    expect(measuredShape('pp512 4871.99 t/s, 12 ms, 0.4 s; 32 KiB, b10167')).toBe(
      'pp512 #.# t/s, # ms, #.# s; 32 KiB, b10167',
    );
  });

  it('links only to files and headings that exist', () => {
    const broken: string[] = [];
    for (const page of [...PAGES, 'examples/fleet-report/README.md']) {
      for (const link of relativeLinks(read(page))) {
        const [target, hash] = link.split('#') as [string, string | undefined];
        const file = target === '' ? page : path.posix.normalize(path.posix.join(path.posix.dirname(page), target));
        if (!existsSync(path.join(root, file))) {
          broken.push(`${page}: ${link} (no ${file})`);
          continue;
        }
        if (hash !== undefined && file.endsWith('.md') && !anchors(read(file)).has(hash))
          broken.push(`${page}: ${link} (no heading #${hash} in ${file})`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('what the README links under docs/ and snapshots/ ships in the package, and so does what those pages link there', () => {
    const seen = new Set<string>();
    const queue = ['README.md'];
    while (queue.length > 0) {
      const page = queue.shift()!;
      for (const link of relativeLinks(read(page))) {
        const file = path.posix.normalize(path.posix.join(path.posix.dirname(page), link.split('#')[0]!));
        if (!/^(docs|snapshots)\//.test(file) || seen.has(file)) continue;
        seen.add(file);
        if (file.endsWith('.md')) queue.push(file);
      }
    }
    expect([...seen].filter((f) => !ships(f))).toEqual([]);
    expect(seen.size).toBeGreaterThanOrEqual(DOC_PAGES.length);
  });

  it('names only repository paths that exist (docs/measurements.md records the paths of its day)', () => {
    const missing = PAGES.filter((p) => p !== 'docs/measurements.md').flatMap((page) =>
      [...read(page).matchAll(/`((?:lib|test|scripts|src-native|snapshots|docs|examples|bench|types)\/[\w./-]+)`/g)]
        .map((m) => m[1]!.replace(/[.:]$/, ''))
        .filter((p) => !p.includes('<') && !/\*/.test(p) && !existsSync(path.join(root, p)))
        .map((p) => `${page}: ${p}`),
    );
    expect(missing).toEqual([]);
  });
});

describe('hand-written tables that restate lib/', () => {
  it('docs/doctor.md lists every probe, in DOCTOR_PROBE_IDS order, and doctor --help names each', () => {
    const rows = [...read('docs/doctor.md').matchAll(/^\| `([a-z-]+)` \|/gm)].map((m) => m[1]);
    expect(rows).toEqual([...DOCTOR_PROBE_IDS]);
    const help = spawnSync(process.execPath, [cli, 'doctor', '--help'], { encoding: 'utf8' }).stdout;
    const words: Record<string, RegExp> = {
      'simdgroup-reduction': /SIMD-group reduction/,
      'simdgroup-matrix': /SIMD-group reduction and matrix|SIMD-group matrix/,
      bfloat: /bfloat/,
      'threadgroup-memory': /threadgroup memory/,
      'nocopy-mmap': /NoCopy buffer/,
      'residency-set': /residency set/,
      heap: /heap/,
    };
    expect(DOCTOR_PROBE_IDS.filter((id) => !(words[id] ?? new RegExp(id)).test(help))).toEqual([]);
  });

  it('docs/profiles.md lists every warning code ApplyWarning has', () => {
    const codes = [...APPLY_WARNING_CODES].sort();
    const table = section(read('docs/profiles.md'), 'Warnings');
    const documented = [...table.matchAll(/^\| `([a-z0-9-]+)` \|/gm)].map((m) => m[1]).sort();
    expect(codes.length).toBeGreaterThan(5);
    expect(documented).toEqual(codes);
  });

  it('docs/api.md’s applyProfile example lists every reason ApplyFailureReason has', () => {
    /** The string members of an exported union type in a lib/ file, in order. */
    const members = (file: string, type: string) => {
      const code = read(file).replace(/\/\*[\s\S]*?\*\//g, '');
      const body = new RegExp(`export type ${type} =([\\s\\S]*?);`).exec(code)?.[1] ?? '';
      return [...body.matchAll(/'([a-z-]+)'/g)].map((m) => m[1]!);
    };
    const reasons = [
      ...members('lib/device/types.ts', 'UnsupportedReason'),
      ...members('lib/patch/apply.ts', 'ApplyFailureReason'),
    ];
    expect(reasons.length).toBeGreaterThanOrEqual(8);
    const example = read('docs/api.md')
      .split('```ts')
      .find((b) => b.includes("applyProfile('apple9-hw-tg')"))!;
    const listed = [.../\} else \{\n((?:\s*\/\/.*\n)+)/.exec(example)![1]!.matchAll(/'([a-z-]+)'/g)].map((m) => m[1]!);
    expect([...listed].sort()).toEqual([...reasons].sort());
  });

  it('docs/api.md’s error example catches the code audit() throws for a missing file', () => {
    const block = [...read('docs/api.md').matchAll(/```ts\n([\s\S]*?)```/g)]
      .map((m) => m[1]!)
      .find((b) => b.includes("audit({ snapshot: 'my.json' })"));
    const caught = /err\.code === '(ERR_\w+)'/.exec(block ?? '')?.[1];
    expect(existsSync(path.join(process.cwd(), 'my.json'))).toBe(false);
    expect((thrown(() => audit({ snapshot: 'my.json' })) as { code: string }).code).toBe(caught);
  });
});

describe('docs/simulation.md: trying it without a Mac', () => {
  const text = section(read('docs/simulation.md'), 'Trying it without a Mac');

  it('says what an installed package does offline, on any OS', () => {
    expect(text).toMatch(/installed package on any OS, offline/);
  });

  it('the offline commands run as written from an installed package: the exit code their comment gives (0 unless said), nothing on stderr', () => {
    const offline = shellCommands(text).filter((c) => c.line.startsWith('npx metal-cap-shim '));
    expect(offline.length).toBeGreaterThanOrEqual(4);
    const where = sandbox();
    for (const { line, exit } of offline) {
      const r = run(line, where);
      expect([line, r.status, r.stderr]).toEqual([line, exit, '']);
    }
  });

  it('doctor is shown on a recording that holds doctor results, not one that records none', () => {
    const line = shellCommands(text).find((c) => c.line.startsWith('npx metal-cap-shim doctor '))!;
    const r = run(line.line, sandbox());
    const rows = r.stdout
      .split('\n')
      .filter((l) => /^ {2}[a-z-]+ {2,}(pass|fail|wrong-result|not-recorded|unsupported)/.test(l));
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.filter((l) => !l.includes('not-recorded')).length).toBeGreaterThan(0);
  });
});

describeSim('docs/simulation.md: the simulated Metal commands of a checkout', () => {
  const sim = section(read('docs/simulation.md'), 'The simulated Metal');
  beforeAll(() => {
    requireSimBuild();
    buildConsumer();
  });

  it('names the switch, the build, and the simulated Metal’s own README', () => {
    expect(sim).toContain('`METAL_CAP_SHIM_SIM_SNAPSHOT`');
    expect(sim).toContain('npm run build:sim');
    expect(sim).toContain('(../test/sim-metal/README.md)');
  });

  it('run as written once built: the exit code their comment gives (0 unless said), nothing on stderr', () => {
    const commands = shellCommands(sim).filter((c) => c.line.startsWith('METAL_CAP_SHIM_SIM_SNAPSHOT='));
    expect(commands.length).toBeGreaterThanOrEqual(5);
    const where = sandbox();
    const consumer: string[] = [];
    for (const { line, exit } of commands) {
      const r = run(line, { ...where, env: { ...where.env, XDG_CACHE_HOME: where.cwd } });
      expect([line, r.status, r.stderr]).toEqual([line, exit, '']);
      if (line.includes('build/test/consumer')) consumer.push(r.stdout);
    }
    // The patch can be seen: the consumer's Apple7 answer, stock and under exec, as the text says.
    expect(consumer).toEqual(['"1007":false\n', '"1007":true\n']);
    expect(sim).toContain('The first run prints `"1007":false`');
  });

  it('the pasted runs (`$ ` lines of its text blocks) print what the page shows, and nothing on stderr', () => {
    const pasted = pastedRuns(sim);
    expect(pasted.map((p) => p.line.split(' ').slice(1, 4).join(' '))).toEqual([
      'build/test/consumer',
      'node dist/cli.js exec',
    ]);
    const where = sandbox();
    for (const { line, output } of pasted) {
      const r = run(line, { ...where, env: { ...where.env, XDG_CACHE_HOME: where.cwd } });
      expect([line, r.status, measuredShape(r.stdout), r.stderr]).toEqual([line, 0, measuredShape(output), '']);
    }
  });
});

describe('examples/README.md: installing on Linux', () => {
  it('gives the install scripts/check/check-examples.sh runs: --ignore-scripts and --omit=optional', () => {
    const examples = read('examples/README.md');
    const linux = section(
      examples.replace(/\n### /g, '\n## '),
      'On Linux (or Windows, or a Mac without the Metal binaries)',
    );
    const documented = shellCommands(linux)
      .map((c) => c.line)
      .find((l) => l.startsWith('npm ci'));
    const checked = read('scripts/check/check-examples.sh').match(/^npm ci .*$/m)?.[0];
    const flags = (line: string | undefined) =>
      (line ?? '').split(/\s+/).filter((w) => w === '--ignore-scripts' || w.startsWith('--omit='));
    expect(flags(documented)).toEqual(['--ignore-scripts', '--omit=optional']);
    expect(flags(documented)).toEqual(flags(checked));
    expect(linux).toContain('compiles llama.cpp from source');
  });
});
