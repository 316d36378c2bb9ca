#!/usr/bin/env bash
# `npm run bench`: builds the server and the benchmark, then measures (see bench/run.ts).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/node24.sh
if [ ! -f node_modules/.package-lock.json ] || [ package.json -nt node_modules/.package-lock.json ]; then
  npm install --no-audit --no-fund
fi
npx tsc -p tsconfig.build.json
rm -rf dist-bench
npx tsc -p tsconfig.bench.json
exec node dist-bench/bench/run.js "$@"
