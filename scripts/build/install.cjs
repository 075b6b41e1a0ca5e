#!/usr/bin/env node
// npm "install" hook. On macOS: node-gyp-build uses a prebuilt binary from prebuilds/, or builds from source with
// node-gyp. Everywhere else there is no Metal to talk to, so nothing is built and the install always succeeds;
// the package still works there offline (snapshots, audits, profiles).
'use strict';

if (process.platform !== 'darwin') process.exit(0);
require('node-gyp-build/bin.js');
