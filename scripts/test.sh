#!/usr/bin/env bash
# The test command: on a fresh Debian 12 machine it installs the toolchain of the Linux test build (clang-14,
# GNUstep Foundation, GCC's libobjc, the blocks runtime, clang's sanitizer runtimes, libc++'s headers, make; for the
# conformance suite clang-19, llvm-19's tools and git; for the real llama.cpp tools cmake and ninja; librsvg2-bin,
# python3-git and python3-tabulate for the chart's rendering and llama.cpp's compare-llama-bench.py; apt, as root),
# installs npm dependencies, builds the TypeScript, the simulated native build and its sanitizer builds, type-checks,
# builds llama.cpp's own device code for the conformance suite (test/conformance/) and finds or builds llama-bench and
# llama-perplexity for the CPU (scripts/build/llama-tools.mjs) and installs node-llama-cpp with its CPU prebuilt
# (scripts/build/node-llama-cpp-prebuilt.mjs; all three in the background meanwhile), runs the whole vitest
# suite, and prints the line and branch coverage of lib/ over the suite and every Node process it starts
# (scripts/measure/coverage.mjs).
set -euo pipefail
cd "$(dirname "$0")/.."

# The simulated build's own toolchain, with its sanitizer runtimes, as scripts/build/sim-toolchain.mjs decides it
# (clang-14, gcc, GCC's libobjc, GNUstep Foundation and gnustep-make, the blocks runtime, libclang-rt-14-dev).
read -ra need <<<"$(node scripts/build/sim-toolchain.mjs --packages --sanitize)"
# libc++'s headers: test/native/static-destructors.test.ts compiles the engine against libc++ as Apple configures it.
[ -f /usr/lib/llvm-14/include/c++/v1/__config ] || need+=(libc++-14-dev)
# The conformance suite (test/conformance/): llama.cpp's sources need clang-19 (and the blocks runtime above);
# node-llama-cpp's Mach-O binaries are read with llvm-19's nm and objdump.
command -v clang-19 >/dev/null || need+=(clang-19)
command -v llvm-objdump-19 >/dev/null || need+=(llvm-19)
command -v git >/dev/null || need+=(git)
# The real llama.cpp tools (scripts/build/llama-tools.mjs, test/repo/llama-tools.test.ts): CMake and Ninja, with clang-19.
command -v cmake >/dev/null || need+=(cmake)
command -v ninja >/dev/null || need+=(ninja-build)
# Native coverage (scripts/measure/native-coverage.mjs, run by .ci/run): llvm-14's llvm-profdata and llvm-cov read what
# the clang-14 build wrote (clang-14 only recommends them).
command -v llvm-profdata-14 >/dev/null || need+=(llvm-14)
# GNU make: test/security/exec-two-users.test.ts runs a sub-make through exec to show make's jobserver reaches it.
command -v make >/dev/null || need+=(make)
# The chart's rendering test (test/format/svg.test.ts) draws it with rsvg-convert, in the font it declares.
command -v rsvg-convert >/dev/null || need+=(librsvg2-bin)
[ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need+=(fonts-dejavu-core)
# llama.cpp's own scripts/compare-llama-bench.py reads bench's export (test/bench/export.test.ts): GitPython, tabulate.
/usr/bin/python3 -c 'import git' 2>/dev/null || need+=(python3-git)
/usr/bin/python3 -c 'import tabulate' 2>/dev/null || need+=(python3-tabulate)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing packages: ${need[*]} — run: sudo apt-get install -y ${need[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

[ -d node_modules ] || npm ci --no-audit --no-fund
# dist/ only when it does not match lib/ (scripts/build/source-stamp.mjs, the check the suite's global setup makes):
# .ci/run has just built it for the docs check, and a rebuild is about 23 CPU-seconds (docs/measurements.md).
node scripts/build/source-stamp.mjs 2>/dev/null || npm run build
npm run build:sim
# llama.cpp's device code for the conformance suite (npm pack, git, clang-19), while the sanitizer builds and the type
# check run: compiled once into ${XDG_CACHE_HOME:-~/.cache}/metal-cap-shim/conformance/ (keyed by tarball integrity,
# harness and compiler) and linked into build/conformance/; the suite reuses it or says why it failed.
mkdir -p build
node test/conformance/build.mjs > build/conformance-build.log 2>&1 &
conformance_build=$!
# llama-bench and llama-perplexity for the CPU (test/repo/llama-tools.test.ts): found at once in
# ${XDG_CACHE_HOME:-~/.cache}/metal-cap-shim/llama-tools/, else built there (minutes on a cold cache: docs/testing.md).
node scripts/build/llama-tools.mjs > build/llama-tools.log 2>&1 &
llama_tools_build=$!
# node-llama-cpp with its Linux CPU prebuilt, for bench --node-llama-cpp (test/bench/node-llama-cpp.test.ts): found in
# ${XDG_CACHE_HOME:-~/.cache}/metal-cap-shim/node-llama-cpp/, else installed there with npm (about a minute).
node scripts/build/node-llama-cpp-prebuilt.mjs > build/node-llama-cpp-prebuilt.log 2>&1 &
nlc_prebuilt=$!
node scripts/build/build-sim.mjs --sanitize
npm run typecheck
wait "$conformance_build" || echo "conformance build failed (build/conformance-build.log); the conformance suite will say why" >&2
wait "$llama_tools_build" || echo "llama.cpp tools build failed (build/llama-tools.log); test/repo/llama-tools.test.ts will say why" >&2
wait "$nlc_prebuilt" || echo "node-llama-cpp prebuilt install failed (build/node-llama-cpp-prebuilt.log); test/bench/node-llama-cpp.test.ts will say why" >&2
# Every Node process the tests start (CLI runs, `node -e` children, register preloads) leaves its V8 coverage here;
# vitest's --coverage measures the test files' own imports of lib/. scripts/measure/coverage.mjs merges the two and
# fails below 90 % of lines or 80 % of branches.
rm -rf build/coverage
# Writable by anyone, like /tmp: a test runs the CLI as nobody, and Node complains on stderr when it cannot write.
mkdir -p build/coverage/v8
chmod 1777 build/coverage/v8
NODE_V8_COVERAGE="$PWD/build/coverage/v8" npm run test:ci -- --coverage.enabled
node scripts/measure/coverage.mjs --check-lines 90 --check-branches 80
