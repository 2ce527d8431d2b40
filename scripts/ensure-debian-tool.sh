#!/usr/bin/env bash
# ensure-debian-tool.sh COMMAND PACKAGE WITHOUT: installs Debian's PACKAGE when COMMAND is missing.
# Where that cannot be done (not root, no apt) it says so, with WITHOUT (what then goes without
# it), and exits 0: the tool is optional to whoever calls this.
set -euo pipefail
cmd=$1 pkg=$2 without=$3
log() { echo "[ensure-$cmd] $*" >&2; }
if command -v "$cmd" >/dev/null 2>&1; then log "$cmd is installed"; exit 0; fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  log "no $cmd and no way to install it: $without"; exit 0
fi
log "installing $pkg from Debian"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >/dev/null
log "$cmd ready"
