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
# The build first (dist/, which the e2e tests run as a user would, and the web console), then Jest;
# the typecheck (sources and tests), formatting and lint meanwhile, beside Jest: each is mostly one
# core's work, and most e2e files wait more than they compute (docs/testing.md). Their result comes
# after Jest's summary; either failing fails the run.
checks_log="$(mktemp -t test-checks.XXXXXX)"
{ npx tsc --noEmit -p tsconfig.json && npm run --silent format:check >/dev/null && npm run --silent lint; } >"$checks_log" 2>&1 & checks=$!
trap 'kill "$checks" 2>/dev/null || true; rm -f "$checks_log"' EXIT
npx tsc -p console/tsconfig.json && npx tsc -p tsconfig.build.json && node scripts/bundle-vendor.mjs >/dev/null && npx vite build -c console/vite.config.mjs >/dev/null
status=0
bash scripts/jest-run.sh "$@" || status=$?
if wait "$checks"; then
  echo "typecheck, format and lint: passed"
else
  cat "$checks_log" >&2
  echo "typecheck, format or lint failed (above): npx tsc --noEmit -p tsconfig.json; npm run format:check; npm run lint" >&2
  status=1
fi
exit "$status"
