#!/usr/bin/env bash
# `npm run soak`: builds the server and the soak, then runs it (bench/soak/soak-run.ts;
# docs/reliability.md). Settings by environment: SOAK_SEED, SOAK_REPLICAS, SOAK_CONVERSATIONS,
# SOAK_SECONDS, SOAK_CLIENTS, SOAK_REPORT. Exits 1 when the checker finds a violation.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/ensure-deps.sh
npx tsc -p tsconfig.build.json
rm -rf dist-bench
npx tsc -p tsconfig.bench.json
exec node dist-bench/bench/soak/soak-run.js "$@"
