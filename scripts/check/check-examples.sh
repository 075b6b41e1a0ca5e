#!/usr/bin/env bash
# Type-checks the examples against the package as built in this repository, runs the ones that work on any OS with
# the Node that runs this script (Node 20 in CI: the engines floor), and lints the example shell script.
#
#   npm run build && bash scripts/check/check-examples.sh
#
# 1. dist/ must exist: the examples import `metal-cap-shim`, which examples/package.json takes from `file:..`, i.e.
#    this repository's package.json exports, which point into dist/.
# 2. Installs examples/node_modules with `npm ci`, which never rewrites examples/package-lock.json (checked at the end
#    with git status). --ignore-scripts and --omit=optional keep node-llama-cpp from downloading or
#    building llama.cpp binaries (its per-platform binaries are optional dependencies, and its postinstall would build
#    one): only its type definitions are needed to type-check. The same flags keep this repo's own install script
#    (native addon) from running through the link.
# 3. Checks that `metal-cap-shim` resolves, from examples/, to this repository (a symlink), not to a registry copy.
# 4. tsc -p examples/tsconfig.json with the examples' pinned TypeScript (the examples are JavaScript with JSDoc types),
#    then the same tsc over the ```ts blocks of README.md and docs/*.md, each a module of its own
#    (scripts/check/docs/snippets.mjs writes them into examples/node_modules/.doc-snippets, where the package resolves).
# 5. Runs scripted-audit and fleet-report's build-matrix with plain `node`, as examples/README.md says.
# 6. shellcheck on the example shell script, when shellcheck is installed.
# 7. The tracked files under examples/ are as they were before the install.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
cd "$root"

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }
t0=$(now)

missing=()
for f in dist/index.js dist/index.d.ts dist/register.js dist/register.d.ts dist/cli.js; do
  [[ -f $f ]] || missing+=("$f")
done
if ((${#missing[@]})); then
  echo "check-examples: the package is not built (missing: ${missing[*]})." >&2
  echo "check-examples: run \`npm run build\` (tsup) in $root first; the examples type-check against dist/." >&2
  exit 1
fi

tracked_before=$(git status --porcelain -- examples 2>/dev/null || true)

echo "== npm ci (examples)"
t=$(now)
npm ci --prefix examples --no-audit --no-fund --ignore-scripts --omit=optional
echo "   install: $(elapsed "$t")"

echo "== metal-cap-shim resolves to this repository"
resolved=$(cd examples && node -p "require('node:fs').realpathSync(require.resolve('metal-cap-shim/package.json'))")
if [[ $resolved != "$root/package.json" ]]; then
  echo "check-examples: from examples/, metal-cap-shim resolves to $resolved, not $root/package.json." >&2
  echo "check-examples: examples/package.json must depend on \"metal-cap-shim\": \"file:..\" (installed as a symlink)." >&2
  exit 1
fi
echo "   $resolved"

echo "== tsc -p examples/tsconfig.json ($(npx --prefix examples tsc --version))"
t=$(now)
npx --prefix examples tsc -p examples/tsconfig.json
echo "   typecheck: $(elapsed "$t")"

echo "== the TypeScript blocks of README.md and docs/*.md type-check"
t=$(now)
snippets=examples/node_modules/.doc-snippets
node scripts/check/docs/snippets.mjs "$snippets"
npx --prefix examples tsc -p "$snippets/tsconfig.json"
echo "   typecheck: $(elapsed "$t")"

echo "== the any-OS examples run on $(node --version) with plain node"
t=$(now)
audit_json=$(cd examples && node scripted-audit/audit-profiles.js)
node -e 'const r = JSON.parse(process.argv[1]); if (!r.ok || r.profiles.length < 5) { console.error(r); process.exit(1); } console.log(`   audit-profiles: ${r.profiles.length} profiles, all verdicts ok`);' "$audit_json"
reports=$(mktemp -d)
node dist/cli.js report --json --snapshot vz-guest-m1-ultra-tahoe-stock --host-label "example host" > "$reports/a.json"
node dist/cli.js report --json --snapshot vz-guest-m1-ultra-tahoe-stock --host-label "example host" --profile apple7 > "$reports/b.json"
table=$(cd examples && node fleet-report/build-matrix.js "$reports")
grep -q '^| example host | macOS 26.5.2 (VirtualMac2,1) | unrecorded | predicted offline (1); gates: reduction, mm, bfloat | predicted offline (1); gates: reduction, mm, bfloat | not measured (2) | residency-set: fail (2\/2) | – | – |$' <<<"$table" || {
  echo "check-examples: build-matrix printed an unexpected table:" >&2
  echo "$table" >&2
  exit 1
}
rm -rf "$reports"
echo "   build-matrix: a 2-profile table; run: $(elapsed "$t")"

echo "== shellcheck examples/fleet-report/collect.sh"
if command -v shellcheck >/dev/null 2>&1; then
  shellcheck examples/fleet-report/collect.sh
  echo "   ok ($(shellcheck --version | sed -n 's/^version: //p'))"
else
  echo "   shellcheck not installed: skipped"
fi

echo "== the install left the tracked files alone"
tracked_after=$(git status --porcelain -- examples 2>/dev/null || true)
if [[ $tracked_after != "$tracked_before" ]]; then
  echo "check-examples: installing the examples changed tracked files:" >&2
  diff <(echo "$tracked_before") <(echo "$tracked_after") >&2 || true
  exit 1
fi
echo "   git status -- examples: unchanged"

echo "check-examples: ok in $(elapsed "$t0")"
