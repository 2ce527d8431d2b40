#!/usr/bin/env bash
# The stress stage of scripts/test.sh runs the timing-sensitive suites again while stress-ng keeps
# every core busy, so that no test can depend on how fast the machine is. This installs Debian's
# stress-ng when it is missing. Where that cannot be done (not root, no apt), it says so and exits
# 0: the stress stage then says it is skipped.
set -euo pipefail
log() { echo "[ensure-stress] $*" >&2; }
if command -v stress-ng >/dev/null 2>&1; then log "stress-ng is installed"; exit 0; fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  log "no stress-ng and no way to install it: the stress stage will be skipped"; exit 0
fi
log "installing stress-ng from Debian"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq stress-ng >/dev/null
log "stress-ng ready"
