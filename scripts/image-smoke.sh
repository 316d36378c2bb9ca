#!/usr/bin/env bash
# The container image's build and start, without a container engine (none runs on our machines):
# each step of the Dockerfile, numbered [B1]… [R5] there and here, performed in fresh temporary
# directories, then the started server is probed the way the image's HEALTHCHECK and a client
# would. Run by test/e2e/image-smoke.e2e-spec.ts; by hand: `bash scripts/image-smoke.sh`.
#
# What it cannot mirror: [R0] (tini, a system package; Node is a plain child here, and SIGTERM goes
# to it directly) and the base image itself (the Node on PATH stands in for node:<.nvmrc>-slim).
# The dev-mode environment of the start step (NODE_ENV=development TA_AUTH_MODE=dev) is what a
# local `docker run -e …` trial sets; the image's own default is NODE_ENV=production, Entra auth.
#
# Exit status 0 when every check passes; otherwise the failing step is named on stderr.
# KEEP_SMOKE_DIR=1 keeps the temporary directory for inspection. IMAGE_SMOKE_SHARED_DEPS=1 (set by
# the test) links the repository's node_modules for [B1] instead of installing them again.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
. "$REPO/scripts/node24.sh"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/ta-image-smoke.XXXXXX")"
SERVER_PID=
cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null || true
  if [ "${KEEP_SMOKE_DIR:-}" = 1 ]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
fail() { echo "image-smoke: $*" >&2; exit 1; }
step_started=$SECONDS
step() { echo "image-smoke: $* (+$((SECONDS - step_started))s)" >&2; }
NPM_FLAGS=(--no-audit --no-fund --prefer-offline)

# The build context: the working tree minus .dockerignore (comments and blank lines dropped; the
# file keeps to plain root-anchored paths and globs so tar reads it as docker does).
step "context: copying $REPO minus .dockerignore"
grep -vE '^\s*(#|$)' "$REPO/.dockerignore" >"$WORK/excludes"
mkdir "$WORK/context"
(cd "$REPO" && tar -cf - --anchored --exclude-from="$WORK/excludes" $(ls -A)) | tar -C "$WORK/context" -xf -
[ ! -e "$WORK/context/node_modules" ] && [ ! -e "$WORK/context/dist" ] || fail "context: .dockerignore'd paths were copied"

# ---- build stage (WORKDIR /app = $WORK/context) ----
cd "$WORK/context"
if [ "${IMAGE_SMOKE_SHARED_DEPS:-}" = 1 ]; then
  # Inside the test run: its own `npm ci --ignore-scripts` (scripts/ensure-deps.sh) installed the
  # same lockfile into the repository's node_modules, which the context links instead of
  # installing it again; the build below still runs on the context's sources alone.
  step "[B1] node_modules of the test run's own npm ci of the same lockfile (linked)"
  cmp -s "$REPO/package-lock.json" "$WORK/context/package-lock.json" || fail "[B1] the context's lockfile is not the repository's"
  ln -s "$REPO/node_modules" node_modules
else
  step "[B1] npm ci --ignore-scripts (all dependencies, exactly the lockfile)"
  npm ci "${NPM_FLAGS[@]}" --ignore-scripts >"$WORK/b1.log" 2>&1 || { cat "$WORK/b1.log" >&2; fail "[B1] failed"; }
fi
step "[B2] npm run build"
npm run build >"$WORK/b2.log" 2>&1 || { cat "$WORK/b2.log" >&2; fail "[B2] build failed"; }
[ -f dist/cli.js ] && [ -f dist/console/index.html ] || fail "[B2] dist/cli.js or dist/console/index.html missing"

# ---- runtime stage (WORKDIR /app = $WORK/app) ----
mkdir "$WORK/app"
cd "$WORK/app"
step "[R1] npm ci --omit=dev --ignore-scripts (production dependencies only)"
cp "$WORK/context/package.json" "$WORK/context/package-lock.json" .
npm ci "${NPM_FLAGS[@]}" --omit=dev --ignore-scripts >"$WORK/r1.log" 2>&1 || { cat "$WORK/r1.log" >&2; fail "[R1] failed"; }
for dev in typescript vite jest; do [ ! -e "node_modules/$dev" ] || fail "[R1] dev dependency $dev was installed"; done
step "[R2] copying dist, bin, plugin-host, demos and /agents"
cp -r "$WORK/context/dist" "$WORK/context/bin" "$WORK/context/plugin-host" "$WORK/context/demos" .
cp -r "$WORK/context/demos/agents" "$WORK/agents"
chmod -R a+rX "$WORK" # mktemp makes it 0700; the server runs as another user below

# [R3] not root: as root (CI), drop to nobody, with no supplementary groups; otherwise the
# caller already is not root.
if [ "$(id -u)" = 0 ]; then
  command -v setpriv >/dev/null || fail "[R3] setpriv (util-linux) is needed to drop root"
  AS_USER=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
else
  AS_USER=()
fi
PORT="$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")"

# [R5] the entrypoint and CMD, with the image's environment ([ENV] in the Dockerfile) except the
# dev-mode trial settings and a free port. Nothing else leaks in from this shell.
step "[R5] starting node bin/teal-agent-server.js serve on port $PORT"
env -i PATH="$PATH" HOME=/nonexistent NODE_ENV=development TA_AUTH_MODE=dev TA_HOST=127.0.0.1 TA_PORT="$PORT" \
  TA_SERVICE_CONFIG="$WORK/agents" TA_LOG_LEVEL=warn \
  "${AS_USER[@]}" node bin/teal-agent-server.js serve >"$WORK/server.log" 2>&1 &
SERVER_PID=$!

# [R4] the image's HEALTHCHECK command, taken from the Dockerfile itself, retried until it passes.
HEALTHCHECK_JS="$(node -e '
  const text = require("fs").readFileSync(process.argv[1], "utf8").replace(/\\\n/g, " ");
  const line = text.split("\n").find((l) => l.startsWith("HEALTHCHECK"));
  const cmd = JSON.parse(line.slice(line.indexOf("CMD ") + 4));
  if (cmd[0] !== "node" || cmd[1] !== "-e") throw new Error("unexpected HEALTHCHECK: " + line);
  console.log(cmd[2]);' "$REPO/Dockerfile")"
step "[R4] waiting for the HEALTHCHECK (GET /health/live) to pass"
for _ in $(seq 1 120); do
  kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log" >&2; fail "[R5] the server exited before it was healthy"; }
  if env TA_PORT="$PORT" node -e "$HEALTHCHECK_JS"; then healthy=1; break; fi
  sleep 0.5
done
[ "${healthy:-}" = 1 ] || { cat "$WORK/server.log" >&2; fail "[R4] not healthy within 60 s"; }

# The process really runs as an unprivileged user (env and setpriv exec, so the pid is Node's).
uid="$(awk '/^Uid:/ {print $2}' "/proc/$SERVER_PID/status")"
[ "$uid" != 0 ] || fail "[R3] the server runs as root"

step "serving: readiness, an agent call on the offline model, the console"
# Node's fetch rather than curl: CI machines need not have curl. Prints the body; fails on non-2xx.
http() { # http <path> [json body]
  node -e '
    const [path, body] = process.argv.slice(1);
    fetch(`http://127.0.0.1:${process.env.PORT}${path}`, body ? { method: "POST", headers: { "content-type": "application/json" }, body } : {})
      .then(async (r) => { const text = await r.text(); process.stdout.write(text); process.exit(r.ok ? 0 : 1); }, (e) => { console.error(e.message); process.exit(1); });' "$@"
}
export PORT
# Bodies are captured, not piped into `grep -q` (which may close the pipe early under pipefail).
ready="$(http /health/ready)" && [[ "$ready" == *'"ready":true'* ]] || fail "GET /health/ready answered: $ready"
answer="$(http /EchoAgent/0.1 '{"chat_history":[{"role":"user","content":"hello from the image"}]}')" &&
  [[ "$answer" == *'"output_raw":"hello from the image"'* ]] || fail "POST /EchoAgent/0.1 answered: $answer"
page="$(http /console/)" && [[ "$page" == *'<html'* ]] || fail "GET /console/ is not the web console"

# SIGTERM, as `docker stop` and Kubernetes send it: the server must stop by itself, promptly.
step "SIGTERM"
kill -TERM "$SERVER_PID"
for _ in $(seq 1 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$SERVER_PID" 2>/dev/null && fail "still running 10 s after SIGTERM"
set +e; wait "$SERVER_PID"; status=$?; set -e
SERVER_PID=
# A drained stop exits 0 (src/common/shutdown/graceful-shutdown.ts); anything else is a failure.
[ "$status" = 0 ] || { cat "$WORK/server.log" >&2; fail "exit status $status after SIGTERM"; }
step "ok (exit status $status after SIGTERM)"
