#!/usr/bin/env bash
# Makes gVisor's runsc a runtime of the local test engine: installs Debian's runsc if missing,
# registers it in /etc/docker/daemon.json and has dockerd reload its configuration (SIGHUP: the
# runtimes are reloaded without a restart, running containers are not touched). An engine that
# already lists runsc is left alone. Where this cannot be done (not root, a remote engine, no
# apt), it says so and exits 0: the runsc suites then say they are skipped.
#   --network=none: this kind of VM refuses runsc containers in the root network namespace
#   otherwise; sandboxes have no network anyway.
set -euo pipefail
log() { echo "[ensure-runsc] $*" >&2; }
has_runsc() { docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"'; }

# The path the engine has for runsc, when it lists one.
runsc_path() { docker info --format '{{with index .Runtimes "runsc"}}{{.Path}}{{end}}' 2>/dev/null; }

if has_runsc; then
  listed=$(runsc_path)
  # A local engine whose registered binary is gone (the package removed since) is not left alone.
  if [ -n "${DOCKER_HOST:-}" ] || [ "${listed#/}" = "$listed" ] || [ -x "$listed" ]; then
    log "the engine lists runsc"; exit 0
  fi
  log "the engine lists runsc at $listed, which does not exist: installing it again"
fi
if [ -n "${DOCKER_HOST:-}" ] || [ "$(id -u)" != 0 ] || ! pgrep -x dockerd >/dev/null; then
  log "cannot register runsc with this engine (not a local dockerd run as root): gVisor tests will be skipped"; exit 0
fi
RUNSC=$(command -v runsc || true)
if [ -z "$RUNSC" ]; then
  if ! command -v apt-get >/dev/null 2>&1; then log "no runsc and no apt: gVisor tests will be skipped"; exit 0; fi
  log "installing runsc from Debian"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq runsc >/dev/null
  RUNSC=$(command -v runsc)
fi
mkdir -p /etc/docker
CONFIG=/etc/docker/daemon.json RUNSC="$RUNSC" node -e '
  const fs = require("fs");
  const file = process.env.CONFIG;
  const config = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8") || "{}") : {};
  config.runtimes = { ...(config.runtimes || {}), runsc: { path: process.env.RUNSC, runtimeArgs: ["--network=none"] } };
  fs.writeFileSync(file, JSON.stringify(config, null, 2) + "\n");
'
log "registered $RUNSC in /etc/docker/daemon.json; reloading dockerd"
kill -HUP "$(pgrep -xo dockerd)"
for _ in $(seq 1 30); do
  if [ "$(runsc_path)" = "$RUNSC" ]; then log "dockerd lists runsc at $RUNSC"; exit 0; fi
  sleep 1
done
log "dockerd did not pick up runsc; gVisor tests will be skipped"
exit 0
