// The fingerprint of what `npm run build` reads: every file under lib/ and types/ (the addon's declarations, which
// the built .d.ts files import), the tsup and TypeScript configurations, the post-build step and package.json.
// scripts/build/post-build.mjs records it in build/dist-stamp.json; the test suite's global setup
// (test/global-setup.ts) compares it with the sources as they are now and rebuilds dist/ when they differ, so a test
// that runs the built CLI can never pass against a stale build.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const stampFile = path.join(root, 'build', 'dist-stamp.json');

function filesUnder(folder) {
  return readdirSync(path.join(root, folder), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(root, path.join(e.parentPath, e.name)));
}

/** sha256 over the sorted relative paths and contents of the build's inputs. */
export function sourceStamp() {
  const files = [
    ...filesUnder('lib'),
    ...filesUnder('types'),
    'tsup.config.ts',
    'tsconfig.json',
    'scripts/build/post-build.mjs',
    'package.json',
  ].sort();
  const hash = createHash('sha256');
  for (const file of files) {
    hash.update(`${file}\0`);
    hash.update(readFileSync(path.join(root, file)));
    hash.update('\0');
  }
  return hash.digest('hex');
}

/** Why dist/ does not match the sources now, or null when it does. */
export function staleReason() {
  if (!existsSync(path.join(root, 'dist', 'index.cjs')) || !existsSync(path.join(root, 'dist', 'cli.js')))
    return 'dist/ is missing';
  if (!existsSync(stampFile)) return 'dist/ was built without a stamp (build/dist-stamp.json)';
  let recorded;
  try {
    recorded = JSON.parse(readFileSync(stampFile, 'utf8')).sources;
  } catch {
    return 'build/dist-stamp.json is unreadable';
  }
  return recorded === sourceStamp() ? null : 'lib/ (or the build configuration) changed since dist/ was built';
}

/**
 * `--build` (npm's prepack): `npm run build` only when dist/ is stale, its output on stderr (npm pack's stdout is the
 * tarball's name), so that `npm run build && npm pack` builds once. npm runs it, so npm_execpath names npm's own script.
 */
function buildIfStale() {
  if (staleReason() === null) return 0;
  const npm = process.env.npm_execpath;
  const r = npm
    ? spawnSync(process.execPath, [npm, 'run', 'build'], { cwd: root, stdio: ['ignore', 2, 2] })
    : spawnSync('npm', ['run', 'build'], { cwd: root, stdio: ['ignore', 2, 2], shell: process.platform === 'win32' });
  return r.status ?? 1;
}

// `node scripts/build/source-stamp.mjs`: exit 0 when dist/ matches the sources, 1 (with the reason on stderr) when not.
// With --build: builds when it does not, and exits as the build does.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv[2] === '--build') process.exitCode = buildIfStale();
  else {
    const reason = staleReason();
    if (reason) process.stderr.write(`${reason}\n`);
    process.exitCode = reason ? 1 : 0;
  }
}
