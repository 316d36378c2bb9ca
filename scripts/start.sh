#!/usr/bin/env bash
# Starts the server on embedded defaults: the demo agents, in-memory state, dev auth and the
# built-in offline model (no API key, no network). Extra arguments go to `serve` (e.g. --port 9000).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/ensure-deps.sh
npx tsc -p tsconfig.build.json
npx vite build -c console/vite.config.mjs   # the web console at /console
export TA_AUTH_MODE="${TA_AUTH_MODE:-dev}"
exec node bin/teal-agent-server.js serve "${TA_SERVICE_CONFIG:-demos/agents}" "$@"
