# Sourced by the other scripts: Node 24 on PATH (scripts/node24.sh), then `npm install` when
# node_modules is missing or older than package.json / package-lock.json. Not `npm ci`: it refuses
# the lockfile here (the registry serves only the linux builds of optional native packages).
. "$(dirname "${BASH_SOURCE[0]}")/node24.sh"
if [ ! -f node_modules/.package-lock.json ] || [ package.json -nt node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm install --no-audit --no-fund
fi
