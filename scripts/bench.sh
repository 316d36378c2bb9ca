#!/usr/bin/env bash
# `npm run bench`: builds the server and the benchmark, then measures (see bench/run.ts).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/ensure-deps.sh
npx tsc -p tsconfig.build.json
node scripts/bundle-vendor.mjs >/dev/null
rm -rf dist-bench
npx tsc -p tsconfig.bench.json
# BENCH_ENTRY: another program of bench/ on the same build (scripts/soak.sh: soak/soak-run).
exec node "dist-bench/bench/${BENCH_ENTRY:-run}.js" "$@"
