#!/usr/bin/env node
// npm "install" hook. On macOS: node-gyp-build uses a prebuilt binary from prebuilds/, or builds from source with
// node-gyp. Everywhere else there is no Metal to talk to, so nothing is built and the install always succeeds;
// the package still works there offline (snapshots, audits, profiles).
//
// A fresh macOS guest usually has no Xcode Command Line Tools. Where no prebuilt binary matches and they are missing,
// a build can only fail, so none is tried: the install succeeds with one line saying what to run, and the first live
// call (probe, applyProfile, exec) says the same in its typed error (lib/device/native.ts reads noAddonLine from here).
'use strict';

const { spawnSync } = require('node:child_process');
const path = require('node:path');

const PACKAGE_ROOT = path.join(__dirname, '..', '..');

/**
 * What a Mac without a built addon is told, at install and at its first live call: what is missing and what to run.
 * `hasTools`: whether the Command Line Tools are there now (installed since, only the rebuild is left).
 */
function noAddonLine(hasTools) {
  return hasTools
    ? 'no prebuilt addon matches this Mac and none was built: run `npm rebuild metal-cap-shim`; the offline features work without it'
    : "no prebuilt addon matches this Mac, and Xcode's Command Line Tools, which build it, are missing: run `xcode-select --install`, then `npm rebuild metal-cap-shim`; the offline features work without it";
}

/**
 * Whether Xcode's Command Line Tools are installed. `xcode-select -p` answers without a dialog; /usr/bin/clang exists
 * on every Mac, but without the tools it only offers to install them, so it proves nothing.
 */
function hasBuildTools(env = process.env) {
  return spawnSync('xcode-select', ['-p'], { env, stdio: 'ignore' }).status === 0;
}

/** Whether node-gyp-build finds an addon for this platform here: a build, or a matching prebuilt binary. */
function hasAddon(root = PACKAGE_ROOT) {
  try {
    require('node-gyp-build').path(root);
    return true;
  } catch {
    return false;
  }
}

/** The install: nothing outside macOS; the one line where nothing can be built; else node-gyp-build's own step. */
function install(platform = process.platform) {
  if (platform !== 'darwin') return;
  if (!hasBuildTools()) {
    if (!hasAddon()) process.stderr.write(`metal-cap-shim: ${noAddonLine(false)}\n`);
    return;
  }
  require('node-gyp-build/bin.js');
}

module.exports = { noAddonLine, hasBuildTools, hasAddon, install };

if (require.main === module) install();
