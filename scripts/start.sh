#!/usr/bin/env bash
# Starts the server on embedded defaults: the demo agents, in-memory state, dev auth and the
# built-in offline model (no API key, no network). Extra arguments go to `serve` (e.g. --port 9000).
# Once the server answers, prints the URLs to try; Ctrl-C (or SIGTERM) stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/ensure-deps.sh
npx tsc -p tsconfig.build.json
node scripts/bundle-vendor.mjs >/dev/null   # NestJS and a few packages in a few files: a faster start (src/boot-vendor-bundle.ts)
npx vite build -c console/vite.config.mjs   # the web console at /console
export TA_AUTH_MODE="${TA_AUTH_MODE:-dev}"

# The port the server will bind: --port N / --port=N, else TA_PORT, else 8000 (0, a free port: no URLs printed).
port="${TA_PORT:-8000}"
args=("$@")
for i in "${!args[@]}"; do
  case "${args[$i]}" in
    --port=*) port="${args[$i]#--port=}" ;;
    --port) port="${args[$((i + 1))]:-$port}" ;;
  esac
done

node bin/teal-agent-server.js serve "${TA_SERVICE_CONFIG:-demos/agents}" "$@" &
server=$!
# Ctrl-C reaches the server too (same process group); a SIGTERM to this script is passed on.
trap 'kill -TERM "$server" 2>/dev/null || true' INT TERM

# Wait until it answers, then print what to try, built from its own service index (GET /).
if [ "$port" != 0 ]; then
  node -e '
    const base = `http://localhost:${process.argv[1]}`;
    const deadline = Date.now() + 60_000;
    const alive = (pid) => { try { return process.kill(pid, 0); } catch { return false; } };
    (async () => {
      for (;;) {
        try {
          const index = await (await fetch(`${base}/`, { headers: { accept: "application/json" } })).json();
          const agent = index.agents.find((a) => a.api_version === "skagents/v2alpha1") ?? index.agents[0];
          const body = agent.stateful
            ? `{"items":[{"content_type":"text","content":"hello"}]}`
            : `{"chat_history":[{"role":"user","content":"hello"}]}`;
          const lines = [
            "",
            `teal-agent-server is up on ${base} (${index.agents.length} agents: ${base}/)`,
            index.console ? `  console  ${base}${index.console}` : null,
            `  docs     ${base}${agent.links.docs}`,
            `  try      curl -s ${base}${agent.path} -H "content-type: application/json" -d '\''${body}'\''`,
            "",
          ];
          process.stderr.write(lines.filter((l) => l !== null).join("\n") + "\n");
          return;
        } catch {
          if (Date.now() > deadline || !alive(Number(process.argv[2]))) return;
          await new Promise((ok) => setTimeout(ok, 250));
        }
      }
    })();' "$port" "$server" || true
fi

set +e
wait "$server"
status=$?
# A trapped signal interrupts the first wait; the second waits for the server to finish stopping.
if kill -0 "$server" 2>/dev/null; then wait "$server"; status=$?; fi
exit "$status"
