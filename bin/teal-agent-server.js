#!/usr/bin/env node
'use strict';
// Before anything else: on an older Node the app would fail with a stack trace, not a hint.
require('./node-version.js').requireNode('teal-agent-server');
// The CLI runs the compiled app (dist/). `npm install` builds it (the `prepare` script).
const { existsSync } = require('node:fs');
const { join } = require('node:path');
const entry = join(__dirname, '..', 'dist', 'cli.js');
if (!existsSync(entry)) {
  process.stderr.write('teal-agent-server is not built: run `npm run build` (or `npm install`) in ' + join(__dirname, '..') + '\n');
  process.exit(1);
}
const cli = require(entry);
cli.runCli(process.argv.slice(2)).catch((err) => cli.reportBootFailure(err));
