#!/usr/bin/env bash
# The ssh:// engine tests run their own OpenSSH server on 127.0.0.1 (test/docker/fixtures/sshServer.ts);
# this installs the binary from Debian if it is missing, without starting the system service.
set -euo pipefail
log() { echo "[ensure-sshd] $*" >&2; }
if [ -x /usr/sbin/sshd ]; then log "sshd is installed"; exit 0; fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  log "no sshd and no way to install it: the ssh:// engine tests will be skipped"; exit 0
fi
log "installing openssh-server (service not started)"
# policy-rc.d 101: package scripts must not start daemons.
created_policy=0
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && created_policy=1
fi
trap '[ "$created_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d' EXIT
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openssh-server >/dev/null
log "sshd ready"
