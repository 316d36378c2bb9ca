#!/usr/bin/env bash
# Runs every test: typecheck, build, then all Jest projects (unit specs beside the source, e2e under
# test/ against real Redis, DynamoDB Local, HTTP servers and a fake OpenAI-compatible server).
# Extra arguments go to Jest (e.g. `bash scripts/test.sh --selectProjects unit`).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/ensure-deps.sh
npx tsc --noEmit -p tsconfig.json
npx tsc -p tsconfig.build.json
export LOG_LEVEL=silent TA_LOG_LEVEL=silent
exec node --experimental-vm-modules node_modules/jest/bin/jest.js "$@"
