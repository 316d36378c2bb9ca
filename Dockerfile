# syntax=docker/dockerfile:1
# teal-agent-server image (docs/deploy.md). Two stages: `build` compiles dist/ (server and web
# console) with the dev dependencies; `runtime` holds only the production dependencies and dist/.
# scripts/image-smoke.sh performs these same steps without a container engine and runs in the test
# suite (test/e2e/image-smoke.e2e-spec.ts): keep the two in step; each step below is numbered and
# the script names the same numbers.
#
#   docker build -t teal-agent-server .
#   docker build --target runtime-python -t teal-agent-server:python .   # with Python, for upstream's custom_plugins.py
#   docker run --rm -p 8000:8000 -v "$PWD/my-agents:/agents:ro" \
#     -e TA_ENTRA_TENANT_ID=… -e TA_ENTRA_AUDIENCE=… -e TA_ENTRA_REQUIRED_SCOPES=… teal-agent-server

ARG NODE_VERSION=24.21.0

# ---- build stage -------------------------------------------------------------------------------
FROM node:${NODE_VERSION}-slim AS build
WORKDIR /app
# [B1] Dependencies first, so a source change reuses this layer: `npm ci`, exactly the lockfile.
# --ignore-scripts: the `prepare` script builds dist/, which needs the sources copied below.
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
# [B2] The sources (the build context minus .dockerignore), then the build: tsc → dist/, Vite → dist/console.
COPY . .
RUN npm run build

# ---- runtime stage -----------------------------------------------------------------------------
FROM node:${NODE_VERSION}-slim AS runtime
# [R0] tini as PID 1: forwards SIGTERM to Node and reaps children (stdio MCP servers, plugins'
# processes). Node as PID 1 would ignore signals it has no handler for. (Not in the smoke script:
# a system package; there Node is a plain child of the script.)
RUN apt-get update && apt-get install -y --no-install-recommends tini && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# NODE_ENV=production refuses TA_AUTH_MODE=dev (docs/auth.md); override it only for local trials.
ENV NODE_ENV=production \
    TA_HOST=0.0.0.0 \
    TA_PORT=8000 \
    TA_SERVICE_CONFIG=/agents
# [R1] Production dependencies only, from the lockfile; no scripts (`prepare` would need the dev tools).
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
# [R2] What runs: the compiled server and console, the CLI, the Python plugin host (dist/../plugin-host;
# it needs a Python, which the runtime-python variant below has), and the demo plugins (the plugin
# loader's fallback directory, dist/../demos/plugins) and demo agents, served from /agents unless a
# volume or a ConfigMap replaces them.
COPY --from=build /app/dist ./dist
COPY bin ./bin
COPY plugin-host ./plugin-host
COPY demos ./demos
COPY demos/agents /agents
# Node's compile cache (docs/configuration.md, Compile cache) is off by default and not warmed
# here: Node refuses a cache directory it cannot write (measured: a read-only one is "Cannot create
# cache directory: permission denied", the cache off), so a cache baked into the image would be
# used only where its directory stays writable, and never under the Kubernetes manifest, whose
# read-only root and emptyDir /tmp hide it; which modules a boot loads also follows the runtime
# configuration (Entra, Redis, OTLP), which the build does not have.
# [R3] Not root. The image's `node` user (uid 1000); Kubernetes runAsNonRoot needs the numeric id.
USER 1000:1000
EXPOSE 8000
# [R4] The process probe at the root (docs/api.md, Health): no agent name needed. Node's fetch,
# since the slim image has no curl.
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.TA_PORT||8000)+'/health/live').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# [R5] The CLI serves TA_SERVICE_CONFIG (/agents). On SIGTERM (forwarded by tini) the app stops
# accepting connections, lets open requests finish, closes the state store and exits.
ENTRYPOINT ["/usr/bin/tini", "--", "node", "bin/teal-agent-server.js"]
CMD ["serve"]

# ---- runtime-python: the same, with Python for upstream's plugins (docs/python-plugins.md) --------
# Debian's python3 and an empty virtual environment in /opt/plugins, owned by the runtime user, that
# TA_PYTHON points at. Plugins' dependencies (upstream's TA_ADDL_REQUIREMENTS) go into it in an image
# built FROM this one: `RUN /opt/plugins/bin/pip install -r requirements.txt` (docs/deploy.md).
FROM runtime AS runtime-python
USER root
RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-venv && rm -rf /var/lib/apt/lists/* \
    && python3 -m venv /opt/plugins && chown -R 1000:1000 /opt/plugins
ENV TA_PYTHON=/opt/plugins/bin/python
USER 1000:1000

# ---- the default target: the runtime without Python ---------------------------------------------
FROM runtime
