#!/usr/bin/env bash
# The Jest part of scripts/test.sh (after the typecheck and the build): the run over several
# workers, the check that nothing was left open, and the closing summary (docs/testing.md).
# Arguments go to Jest. EXIT_GRACE_S (30): how long Jest may take to exit after its results.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/node24.sh
export LOG_LEVEL=silent TA_LOG_LEVEL=silent
work="$(mktemp -d -t jest-run.XXXXXX)"
trap 'rm -rf "$work"' EXIT
results="$work/results.json"
# Every temporary file and directory the tests make (agent directories, builds, servers' data) goes
# under the run's own directory, removed with it: a run leaves nothing behind in /tmp.
# Open to other users as /tmp is (sticky): a PostgreSQL run as root is started as the postgres user.
chmod 755 "$work"
mkdir -m 1777 "$work/tmp"
export TMPDIR="$work/tmp"
# Two workers by default: most e2e files wait (on servers, leases, timers) more than they compute,
# so two overlap well on two cores; a file that depends on CPU it cannot get is a file to fix
# (docs/testing.md, Writing a test that passes on any machine). TEST_WORKERS=1 runs the files one
# after another in Jest's own process; 3 or more where a machine has the cores.
workers="${TEST_WORKERS:-2}"
# No --forceExit: a handle a test leaves open must fail the run, not be hidden. Jest writes its
# results, then exits once nothing is left open; a run that has written them and still has not
# exited EXIT_GRACE_S later is stopped and failed.
status=0
node --experimental-vm-modules node_modules/jest/bin/jest.js --maxWorkers="$workers" --json --outputFile="$results" "$@" \
  2> >(tee "$work/stderr" >&2) & jest=$!
EXIT_GRACE_S="${EXIT_GRACE_S:-30}"
while kill -0 "$jest" 2>/dev/null; do
  if [ -s "$results" ] && [ $(( $(date +%s) - $(stat -c %Y "$results") )) -gt "$EXIT_GRACE_S" ]; then
    echo "Jest reported every test but had not exited ${EXIT_GRACE_S} s later: a test left a handle open (find it: run the suspect files with --detectOpenHandles)" >&2
    kill "$jest" 2>/dev/null || true
    status=1
    break
  fi
  sleep 1
done
set +e; wait "$jest"; jest_status=$?; set -e
[ "$status" != 0 ] || status=$jest_status
# A worker Jest had to kill after its files ("failed to exit gracefully") is reported, not failed:
# Jest waits only 500 ms for a worker, and a handle a test closes without awaiting it (a child
# process still exiting, a server still closing) is still open then. A handle never closed keeps a
# run of one file (in Jest's own process) alive, which the check above fails; the same full run in
# one process (--runInBand --detectOpenHandles) exits by itself and names no handle.
if grep -q "failed to exit gracefully" "$work/stderr"; then
  echo "note: a Jest worker was still closing a handle 500 ms after its last file (see docs/testing.md)" >&2
fi
# One plain closing line ("N passed, N failed"), readable by any CI whatever the runner, after the
# ten slowest files (the ones to look at when the run gets long).
[ -s "$results" ] && node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const files = r.testResults.map((t) => ({ s: (t.endTime - t.startTime) / 1000, name: require("path").relative(process.cwd(), t.name) }));
  console.log("slowest files:");
  for (const f of files.sort((a, b) => b.s - a.s).slice(0, 10)) console.log(`  ${f.s.toFixed(1).padStart(6)} s  ${f.name}`);
  console.log(`wall time: ${process.argv[2]} s in all, ${((Date.now() - r.startTime) / 1000).toFixed(0)} s of them the Jest run`);
  const skipped = r.numPendingTests + r.numTodoTests;
  console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed` + (skipped ? `, ${skipped} skipped` : ""));
  // The durations of this run in test/durations.json'"'"'s shape (files of 2 s or more), to refresh it with.
  const slower = Object.fromEntries(files.filter((f) => f.s >= 2).sort((a, b) => b.s - a.s).map((f) => [f.name, Number(f.s.toFixed(1))]));
  require("fs").mkdirSync("test-artifacts", { recursive: true });
  require("fs").writeFileSync("test-artifacts/durations.json", JSON.stringify(slower, null, 2) + "\n");
' "$results" "$(( $(date +%s) - ${TEST_RUN_STARTED:-$(( $(date +%s) - SECONDS ))} ))" || true
exit "$status"
