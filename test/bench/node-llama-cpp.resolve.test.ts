// Where bench --node-llama-cpp takes node-llama-cpp from (findProjectPackage, resolveNodeLlamaCpp): the project's own
// node_modules, or a parent's (workspaces hoist packages) only through folders of ours or root's that nobody else may
// write; never a package another user planted in a shared parent (/tmp/node_modules) or a global folder (NODE_PATH).
// The second user is `nobody` when the tests run as root (as CI does); otherwise the folders' modes stand in.
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findProjectPackage, resolveNodeLlamaCpp } from '../../lib/bench/node-llama-cpp.js';
import { BenchError } from '../../lib/core/errors.js';
import { cli, requireSimBuild } from '../support/helpers.js';

const asRoot = process.getuid?.() === 0;
const NOBODY = 65534;
const GUEST = { METAL_CAP_SHIM_SIM_SNAPSHOT: 'vz-guest-m1-ultra-tahoe-stock' };
const tmp = realpathSync(mkdtempSync(path.join(tmpdir(), 'mcs-nlc-resolve-')));
chmodSync(tmp, 0o755);
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

let folders = 0;
/** A new folder under `parent` with `mode`. */
function folder(parent = tmp, mode = 0o755): string {
  const dir = path.join(parent, `d${folders++}`);
  mkdirSync(dir);
  chmodSync(dir, mode);
  return dir;
}

/**
 * A node-llama-cpp 3.22.0 in `dir`/node_modules whose import writes `marker` (so a test sees whether it ran), owned by
 * `uid` (node_modules, the package and its files) when the tests run as root.
 */
function plant(dir: string, marker: string, uid?: number): string {
  const pkg = path.join(dir, 'node_modules', 'node-llama-cpp');
  mkdirSync(pkg, { recursive: true });
  writeFileSync(
    path.join(pkg, 'package.json'),
    JSON.stringify({ name: 'node-llama-cpp', version: '3.22.0', type: 'module', exports: { '.': './index.js' } }),
  );
  writeFileSync(
    path.join(pkg, 'index.js'),
    `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(marker)}, 'ran');\n`,
  );
  if (uid !== undefined && asRoot)
    for (const p of [path.join(dir, 'node_modules'), pkg, path.join(pkg, 'package.json'), path.join(pkg, 'index.js')])
      chownSync(p, uid, uid);
  return pkg;
}

/** What resolveNodeLlamaCpp threw, as code and message. */
function refusal(project: string): { code: string; message: string } {
  try {
    resolveNodeLlamaCpp(project);
  } catch (e) {
    if (!(e instanceof BenchError)) throw e;
    return { code: e.code, message: e.message };
  }
  throw new Error(`resolveNodeLlamaCpp(${project}) found a package`);
}

const notInstalled = (project: string, stoppedAt: string) =>
  `node-llama-cpp is not installed in ${project} (bench --node-llama-cpp uses your project's own); the search stopped at ${stoppedAt} (a package there could have been planted by another user): run bench from your project's folder or name it with --project DIR, or install it there with \`npm install node-llama-cpp\``;

describe('findProjectPackage and resolveNodeLlamaCpp', () => {
  it("takes the project's own node_modules first", () => {
    const project = folder();
    const pkg = plant(project, path.join(tmp, 'own-ran'));
    expect(findProjectPackage(project, 'node-llama-cpp')).toEqual({
      folder: project,
      modules: path.join(project, 'node_modules'),
    });
    expect(resolveNodeLlamaCpp(project)).toEqual({ entry: path.join(pkg, 'index.js'), version: '3.22.0' });
  });

  it("climbs to a workspace root's node_modules through folders of ours that nobody else may write", () => {
    const workspace = folder();
    const pkg = plant(workspace, path.join(tmp, 'ws-ran'));
    const app = folder(folder(workspace));
    expect(resolveNodeLlamaCpp(app)).toEqual({ entry: path.join(pkg, 'index.js'), version: '3.22.0' });
  });

  it('never climbs into a shared folder (mode 1777, as /tmp) where another user planted node_modules', () => {
    const shared = folder(tmp, 0o1777);
    if (asRoot) chownSync(shared, NOBODY, NOBODY);
    plant(shared, path.join(tmp, 'shared-ran'), NOBODY);
    const project = folder(shared);
    expect(findProjectPackage(project, 'node-llama-cpp')).toEqual({
      folder: null,
      stoppedAt: `${shared}, which ${asRoot ? `belongs to another user (uid ${NOBODY})` : 'can be written by other users (mode 1777)'}`,
    });
    expect(refusal(project)).toEqual({
      code: 'ERR_BENCH_NO_NODE_LLAMA_CPP',
      message: notInstalled(
        project,
        `${shared}, which ${asRoot ? `belongs to another user (uid ${NOBODY})` : 'can be written by other users (mode 1777)'}`,
      ),
    });
  });

  it('never climbs into a parent its group may write, even with no other user in it', () => {
    const parent = folder(tmp, 0o775);
    plant(parent, path.join(tmp, 'group-ran'));
    const project = folder(parent);
    expect(refusal(project).message).toBe(
      notInstalled(project, `${parent}, which can be written by its group (mode 0775)`),
    );
  });

  it.runIf(asRoot)(
    "never climbs into another user's folder, nor takes another user's node_modules in the project",
    () => {
      const theirs = folder();
      chownSync(theirs, NOBODY, NOBODY);
      plant(theirs, path.join(tmp, 'theirs-ran'), NOBODY);
      const inTheirs = folder(theirs);
      expect(refusal(inTheirs).message).toBe(
        notInstalled(inTheirs, `${theirs}, which belongs to another user (uid ${NOBODY})`),
      );
      const project = folder();
      plant(project, path.join(tmp, 'project-ran'), NOBODY);
      expect(refusal(project).message).toBe(
        notInstalled(project, `${path.join(project, 'node_modules')}, which belongs to another user (uid ${NOBODY})`),
      );
    },
  );

  it('a project folder that does not exist has none, and names no folder', () => {
    expect(findProjectPackage(path.join(tmp, 'missing'), 'node-llama-cpp')).toEqual({ folder: null, stoppedAt: null });
  });
});

describe('bench --node-llama-cpp --project', () => {
  /** bench run in `cwd` over the simulated guest. */
  function bench(cwd: string, args: string[], env: NodeJS.ProcessEnv = {}) {
    return spawnSync(process.execPath, [cli, 'bench', '--node-llama-cpp', '--model', 'm.gguf', ...args], {
      cwd,
      encoding: 'utf8',
      env: { ...process.env, NO_COLOR: '1', ...GUEST, ...env },
      timeout: 120_000,
    });
  }

  it('a package planted in a shared parent of the working folder never runs: ERR_BENCH_NO_NODE_LLAMA_CPP, exit 2', () => {
    requireSimBuild();
    const shared = folder(tmp, 0o1777);
    if (asRoot) chownSync(shared, NOBODY, NOBODY);
    const marker = path.join(tmp, 'cli-shared-ran');
    plant(shared, marker, NOBODY);
    const r = bench(folder(shared), ['--rounds', '1']);
    expect([r.status, r.stdout, r.stderr.split(':')[1]]).toEqual([2, '', ' ERR_BENCH_NO_NODE_LLAMA_CPP']);
    expect(existsSync(marker)).toBe(false);
  });

  it('nor one in a global folder (NODE_PATH)', () => {
    requireSimBuild();
    const global = folder();
    const marker = path.join(tmp, 'cli-global-ran');
    plant(global, marker);
    const r = bench(folder(), ['--rounds', '1'], { NODE_PATH: path.join(global, 'node_modules') });
    expect([r.status, r.stderr.split(':')[1]]).toEqual([2, ' ERR_BENCH_NO_NODE_LLAMA_CPP']);
    expect(existsSync(marker)).toBe(false);
  });

  it('--project DIR names the project: its node-llama-cpp is the one loaded, from any working folder', () => {
    requireSimBuild();
    const project = folder();
    const marker = path.join(tmp, 'cli-project-ran');
    plant(project, marker);
    // The fake package has no getLlama: the child fails after importing it, which is what shows where it came from.
    const r = bench(folder(), ['--rounds', '1', '--project', project]);
    expect(r.stderr).toContain('ERR_BENCH_TOOL');
    expect(existsSync(marker)).toBe(true);
  });

  it('--project is for --node-llama-cpp only', () => {
    const r = spawnSync(process.execPath, [cli, 'bench', '--project', tmp, '--', 'llama-bench'], { encoding: 'utf8' });
    expect([r.status, r.stderr]).toEqual([
      2,
      'metal-cap-shim: ERR_USAGE: --project is for --node-llama-cpp; a llama.cpp tool takes its own options after `--`\n' +
        'Run `metal-cap-shim bench --help` for usage.\n',
    ]);
  });
});
