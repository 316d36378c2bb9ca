'use strict';
// The Node this project needs (package.json `engines`), checked first by every entry point a person
// runs (this bin, the demo launchers): on an older Node they would otherwise die later with a stack
// trace (NestJS 12 is ESM-only; the demos are TypeScript that only a recent Node runs as is).
// Plain CommonJS with nothing newer than Node 12 syntax, so any Node can run the check itself.
const { join } = require('node:path');
const { engines } = require('../package.json');

const ROOT = join(__dirname, '..');

/** The one-line problem of running `what` on Node `version`, or undefined when that Node will do. */
function nodeVersionProblem(what, version, range) {
  const wanted = /^>=\s*(\d+)(?:\.(\d+))?/.exec(range || engines.node);
  if (!wanted) throw new Error('package.json engines.node must read ">=MAJOR.MINOR", not ' + JSON.stringify(range || engines.node));
  const need = [Number(wanted[1]), Number(wanted[2] || 0)];
  const have = String(version).replace(/^v/, '').split('.').map(Number);
  if (have[0] > need[0] || (have[0] === need[0] && have[1] >= need[1])) return undefined;
  return (
    what +
    ' needs Node ' +
    need.join('.') +
    ' or newer, and this is Node ' +
    String(version).replace(/^v/, '') +
    ': run `. scripts/node24.sh` in ' +
    ROOT +
    ' (it puts Node 24 LTS on PATH, installing it into .tools/ if needed), then run this again.'
  );
}

/** Exits 1 with that one line on stderr when this Node is too old. */
function requireNode(what) {
  const problem = nodeVersionProblem(what, process.versions.node);
  if (!problem) return;
  process.stderr.write(problem + '\n');
  process.exit(1);
}

module.exports = { nodeVersionProblem, requireNode };
