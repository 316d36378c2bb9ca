#!/usr/bin/env bash
# Runs every test: typecheck, build, then all Jest projects (unit specs beside the source, e2e under
# test/ against real Redis, DynamoDB Local, HTTP servers and a fake OpenAI-compatible server).
# Extra arguments go to Jest (e.g. `bash scripts/test.sh --selectProjects unit`).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/ensure-deps.sh
npx tsc --noEmit -p tsconfig.json
npx tsc -p console/tsconfig.json
npx tsc -p tsconfig.build.json
npx vite build -c console/vite.config.mjs   # the web console (dist/console), which the browser tests load
export LOG_LEVEL=silent TA_LOG_LEVEL=silent
results="$(mktemp -t jest-results.XXXXXX.json)"
status=0
# --forceExit: a handle left open by one test file must not hang CI after every test has reported.
node --experimental-vm-modules node_modules/jest/bin/jest.js --forceExit --json --outputFile="$results" "$@" || status=$?
# One plain closing line ("N passed, N failed"), readable by any CI whatever the runner.
node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const skipped = r.numPendingTests + r.numTodoTests;
  console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed` + (skipped ? `, ${skipped} skipped` : ""));
' "$results" || true
rm -f "$results"
exit "$status"
