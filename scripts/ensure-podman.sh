#!/usr/bin/env bash
# Makes a rootful Podman service answer at unix:///run/codeact-podman/podman.sock with the test
# image in its store, for the Podman subset of the Docker suites:
#   - installs Debian's podman when it is missing, with what it needs to run a container here:
#     an OCI runtime (runc), conmon, a network stack (netavark; the sandboxes use none, but the
#     engine wants one configured), fuse-overlayfs and slirp4netns (rootless), uidmap (subuids);
#   - starts `podman system service --time=0` in the background when the socket does not answer
#     (log in $STATE/service.log, pid in $STATE/service.pid; a second call finds it answering);
#   - copies the test image from the Docker engine (`docker save | podman load`) when Podman
#     lacks it (Podman names it localhost/codeact-sandbox/python:bookworm), and, where the Docker
#     engine has them, the network and resume tests' images: the pip image (a resume test also
#     moves a tag to it), and debian:bookworm-slim, which the network proxy's image is built from
#     on Podman as on Docker.
#   - with --rootless, also a rootless service of the user codeact-rootless (made, with subuids,
#     when missing) at unix:///run/user/UID/podman.sock, for the test that checks what the sandbox
#     does where rootless Podman cannot enforce its limits (here: cgroups v1).
# Where this cannot be done (not root, no apt), it says so and exits 0: the Podman stage then
# says it is skipped.
#   CODEACT_TEST_IMAGE   the image to copy (default codeact-sandbox/python:bookworm)
set -euo pipefail
log() { echo "[ensure-podman] $*" >&2; }
STATE=/run/codeact-podman
SOCK=$STATE/podman.sock
IMAGE=${CODEACT_TEST_IMAGE:-codeact-sandbox/python:bookworm}
answers() { curl -sf --max-time 5 --unix-socket "$SOCK" http://d/_ping >/dev/null 2>&1; }

if [ "$(id -u)" != 0 ]; then log "not root: cannot start a rootful Podman service; Podman tests will be skipped"; exit 0; fi
if ! command -v podman >/dev/null 2>&1; then
  if ! command -v apt-get >/dev/null 2>&1; then log "no podman and no apt: Podman tests will be skipped"; exit 0; fi
  log "installing podman from Debian"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc conmon netavark fuse-overlayfs slirp4netns uidmap curl >/dev/null
fi
if ! command -v curl >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq curl >/dev/null
fi

mkdir -p "$STATE"
if ! answers; then
  if [ -f "$STATE/service.pid" ] && kill -0 "$(cat "$STATE/service.pid")" 2>/dev/null; then
    log "the service (pid $(cat "$STATE/service.pid")) does not answer: stopping it"
    kill "$(cat "$STATE/service.pid")" || true
    sleep 1
  fi
  rm -f "$SOCK"
  log "starting podman system service at unix://$SOCK (log: $STATE/service.log)"
  # setsid: the service outlives this script and the test run's process group. From $STATE:
  # conmon 2.1 writes a file "oom" into its working directory when a container is OOM-killed.
  (cd "$STATE" && exec setsid podman system service --time=0 "unix://$SOCK" >>"$STATE/service.log" 2>&1 </dev/null) &
  echo $! >"$STATE/service.pid"
  for _ in $(seq 1 30); do answers && break; sleep 1; done
  if ! answers; then log "the service did not answer within 30 s (see $STATE/service.log); Podman tests will be skipped"; exit 0; fi
fi
log "podman $(podman version --format '{{.Server.Version}}' 2>/dev/null || podman --version) answers at unix://$SOCK"

# Podman stores an unqualified name under localhost/; the sandbox finds it by either name.
copy() {
  if podman image exists "localhost/$1" || podman image exists "$1"; then return 0; fi
  if ! docker image inspect "$1" >/dev/null 2>&1; then log "the Docker engine has no $1 to copy"; return 1; fi
  log "copying $1 from the Docker engine into Podman's store"
  docker save "$1" | podman load -q >/dev/null
}
if ! copy "$IMAGE"; then log "Podman tests will fail to find $IMAGE"; exit 0; fi
log "Podman has $(podman image inspect --format '{{index .RepoTags 0}}' "$IMAGE")"
for extra in codeact-sandbox/python-pip:bookworm debian:bookworm-slim; do
  copy "$extra" || log "the network and resume tests under Podman will fail to find $extra"
done

[ "${1:-}" = --rootless ] || exit 0
ROOTLESS_USER=codeact-rootless
if ! id "$ROOTLESS_USER" >/dev/null 2>&1; then
  log "adding the user $ROOTLESS_USER for rootless Podman"
  useradd -m -s /bin/sh "$ROOTLESS_USER"
fi
ruid=$(id -u "$ROOTLESS_USER")
# useradd gives new users subordinate ids where login.defs says so; a user made without them gets a range here.
for f in /etc/subuid /etc/subgid; do
  grep -q "^$ROOTLESS_USER:" "$f" 2>/dev/null || echo "$ROOTLESS_USER:$((200000 + ruid * 65536)):65536" >>"$f"
done
RSOCK=/run/user/$ruid/podman.sock
install -d -m 700 -o "$ROOTLESS_USER" "/run/user/$ruid"
ranswers() { curl -sf --max-time 5 --unix-socket "$RSOCK" http://d/_ping >/dev/null 2>&1; }
if ! ranswers; then
  log "starting rootless podman system service as $ROOTLESS_USER at unix://$RSOCK (log: $STATE/rootless.log)"
  touch "$STATE/rootless.log" && chown "$ROOTLESS_USER" "$STATE/rootless.log"
  su -s /bin/sh "$ROOTLESS_USER" -c "cd && XDG_RUNTIME_DIR=/run/user/$ruid setsid podman system service --time=0 unix://$RSOCK </dev/null >>$STATE/rootless.log 2>&1 & echo \$! >/run/user/$ruid/podman-service.pid"
  for _ in $(seq 1 30); do ranswers && break; sleep 1; done
fi
if ranswers; then log "rootless podman answers at unix://$RSOCK"; else log "rootless podman did not answer (see $STATE/rootless.log)"; fi
