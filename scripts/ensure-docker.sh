#!/usr/bin/env bash
# Make sure a Docker engine answers. Reuses a running engine (Docker Desktop, a system
# service, DOCKER_HOST); on a bare Debian machine installs docker.io and starts dockerd.
set -euo pipefail
log() { echo "[ensure-docker] $*" >&2; }

if docker info >/dev/null 2>&1; then
  log "engine is reachable"
  exit 0
fi
if [ -n "${DOCKER_HOST:-}" ]; then
  log "DOCKER_HOST=$DOCKER_HOST is set but the engine does not answer"; exit 1
fi
if ! command -v dockerd >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    log "no Docker engine found; install Docker (Docker Desktop on macOS/Windows) and start it"; exit 1
  fi
  log "installing docker.io from Debian"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
fi
if [ "$(id -u)" != 0 ]; then
  log "dockerd is installed but not running; start it (e.g. sudo systemctl start docker)"; exit 1
fi
log "starting dockerd"
mkdir -p /var/log
nohup dockerd >/var/log/codeact-dockerd.log 2>&1 &
for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then log "engine is up"; exit 0; fi
  sleep 1
done
log "dockerd did not come up; see /var/log/codeact-dockerd.log"
tail -20 /var/log/codeact-dockerd.log >&2 || true
exit 1
