# Sourced by the other scripts: Node 24 on PATH (scripts/node24.sh), then `npm ci` (exactly the
# committed lockfile) when node_modules is missing or older than package.json / package-lock.json.
# A lockfile out of step with package.json fails here, as it would in the image build; after
# changing dependencies, run `npm install` and commit the lockfile it writes.
. "$(dirname "${BASH_SOURCE[0]}")/node24.sh"
if [ ! -f node_modules/.package-lock.json ] || [ package.json -nt node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  # --ignore-scripts: the package's own `prepare` (a full build) would run here, and every script
  # that sources this one builds next anyway (test.sh, start.sh, bench.sh). --prefer-offline: a
  # package already in npm's cache is taken from it without asking the registry whether it is
  # still current (the lockfile pins every version and its integrity, which npm checks either way);
  # what is not there is fetched. Where the registry answers slowly or not at all (a proxy whose CA
  # this environment does not trust), that asking cost ~3 min of a CI run here, against ~22 s.
  npm ci --no-audit --no-fund --ignore-scripts --prefer-offline
fi
