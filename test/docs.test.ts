// The docs a user follows without a Mac: the README's commands for trying the API offline and on the simulated
// Metal run as written, the install notes cover npm 11's allowScripts warning on every OS, and the examples README
// installs on Linux the way scripts/check-examples.sh does.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cli, describeSim, dist, requireSimBuild, root } from './helpers.js';

const readme = readFileSync(path.join(root, 'README.md'), 'utf8');

/** The text of a `## ` section of a Markdown document, up to the next one. */
function section(text: string, title: string): string {
  const start = text.indexOf(`\n## ${title}\n`);
  expect(start, `no section "${title}"`).toBeGreaterThan(-1);
  const end = text.indexOf('\n## ', start + 1);
  return text.slice(start, end === -1 ? undefined : end);
}

/** The lines of the ```sh blocks of a text, comments and blank lines left out. */
function shellLines(text: string): string[] {
  return shellCommands(text).map((c) => c.line);
}

/** Each command of the ```sh blocks with the exit code its comment gives (`# exit 1: …`), 0 by default. */
function shellCommands(text: string): { line: string; exit: number }[] {
  return [...text.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) =>
    m[1]!
      .split('\n')
      .map((raw) => ({ line: raw.replace(/\s+#.*$/, '').trim(), exit: Number(/#\s*exit (\d+)/.exec(raw)?.[1] ?? 0) }))
      .filter((c) => c.line !== ''),
  );
}

/** A folder to run documented commands in: `metal-cap-shim` on PATH, and `dist` as a checkout has it. */
function sandbox(): { cwd: string; env: NodeJS.ProcessEnv } {
  const cwd = mkdtempSync(path.join(tmpdir(), 'mcs-docs-'));
  const bin = path.join(cwd, '.bin');
  mkdirSync(bin);
  writeFileSync(path.join(bin, 'metal-cap-shim'), `#!/bin/sh\nexec '${process.execPath}' '${cli}' "$@"\n`);
  chmodSync(path.join(bin, 'metal-cap-shim'), 0o755);
  symlinkSync(dist, path.join(cwd, 'dist'));
  const { METAL_CAP_SHIM_SIM_SNAPSHOT: _sim, ...env } = process.env;
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

describe('README: trying it without a Mac', () => {
  const text = section(readme, 'Trying it without a Mac');
  const lines = shellLines(text);

  it('names the switch, what needs a checkout and build:sim, and what an installed package does offline', () => {
    expect(text).toContain('`METAL_CAP_SHIM_SIM_SNAPSHOT`');
    expect(text).toContain('`npm run build:sim`');
    expect(text).toMatch(/installed package on any OS, offline/);
  });

  it('the offline commands run as written from an installed package: exit 0, nothing on stderr', () => {
    const offline = lines.filter((l) => l.startsWith('npx metal-cap-shim '));
    expect(offline.length).toBeGreaterThanOrEqual(4);
    const where = sandbox();
    for (const line of offline) {
      const r = run(line, where);
      expect([line, r.status, r.stderr]).toEqual([line, 0, '']);
    }
  });
});

describeSim('README: the simulated Metal commands of a checkout', () => {
  beforeAll(requireSimBuild);

  it('run as written once built: the exit code their comment gives (0 unless said), nothing on stderr', () => {
    const sim = section(readme, 'Trying it without a Mac');
    const commands = shellCommands(sim).filter((c) => c.line.startsWith('METAL_CAP_SHIM_SIM_SNAPSHOT='));
    expect(commands.length).toBeGreaterThanOrEqual(3);
    const where = sandbox();
    for (const { line, exit } of commands) {
      const r = run(line, { ...where, env: { ...where.env, XDG_CACHE_HOME: where.cwd } });
      expect([line, r.status, r.stderr]).toEqual([line, exit, '']);
    }
  });
});

describe('README: npm 11’s allowScripts warning, on every OS', () => {
  it('the install notes say what it is, that it applies everywhere, and how to answer it', () => {
    const install = section(readme, 'Install');
    expect(install).toMatch(/npm 11, on every OS,/);
    expect(install).toContain('not yet covered by allowScripts');
    expect(install).toContain('npm install-scripts approve metal-cap-shim');
    expect(install).toContain('npm install-scripts deny metal-cap-shim');
  });
});

describe('examples/README.md: installing on Linux', () => {
  it('gives the install scripts/check-examples.sh runs: --ignore-scripts and --omit=optional', () => {
    const examples = readFileSync(path.join(root, 'examples', 'README.md'), 'utf8');
    const linux = section(
      examples.replace(/\n### /g, '\n## '),
      'On Linux (or Windows, or a Mac without the Metal binaries)',
    );
    const documented = shellLines(linux).find((l) => l.startsWith('npm ci'));
    const checked = readFileSync(path.join(root, 'scripts', 'check-examples.sh'), 'utf8').match(/^npm ci .*$/m)?.[0];
    const flags = (line: string | undefined) =>
      (line ?? '').split(/\s+/).filter((w) => w === '--ignore-scripts' || w.startsWith('--omit='));
    expect(flags(documented)).toEqual(['--ignore-scripts', '--omit=optional']);
    expect(flags(documented)).toEqual(flags(checked));
    expect(linux).toContain('compiles llama.cpp from source');
  });
});
