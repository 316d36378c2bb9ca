#!/usr/bin/env bash
# `npm run soak`: builds the server and the soak, then runs it (bench/soak/soak-run.ts;
# docs/reliability.md). Settings by environment: SOAK_SEED, SOAK_REPLICAS, SOAK_CONVERSATIONS,
# SOAK_SECONDS, SOAK_CLIENTS, SOAK_FAULT_GAP_MS, SOAK_FAULTS, SOAK_REPORT, SOAK_HISTORY, SOAK_BREAK. Exits 1 when the checker
# finds a violation.
set -euo pipefail
BENCH_ENTRY=soak/soak-run exec bash "$(dirname "$0")/bench.sh" "$@"
