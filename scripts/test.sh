#!/usr/bin/env bash
# Runs every test: typecheck, build, then all Jest projects (unit specs beside the source, e2e under
# test/ against real Redis, DynamoDB Local, HTTP servers and a fake OpenAI-compatible server).
# Extra arguments go to Jest (e.g. `bash scripts/test.sh --selectProjects unit`). How the run is
# laid out (workers, order, the open-handle check, the slowest files): docs/testing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
# When the whole run began, for the closing summary of scripts/jest-run.sh (wall time in all).
export TEST_RUN_STARTED="${TEST_RUN_STARTED:-$(date +%s)}"
. scripts/ensure-deps.sh
# The typecheck (sources and tests), then formatting and lint, beside the build (dist/, which the
# e2e tests run): each is mostly one core's work (docs/testing.md, Formatting and lint).
{ npx tsc --noEmit -p tsconfig.json && npm run --silent format:check >/dev/null && npm run --silent lint; } & checks=$!
{ npx tsc -p console/tsconfig.json && npx tsc -p tsconfig.build.json && npx vite build -c console/vite.config.mjs >/dev/null; } & build=$!
wait "$checks"
wait "$build"
bash scripts/jest-run.sh "$@"
