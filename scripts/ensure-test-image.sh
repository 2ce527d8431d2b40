#!/usr/bin/env bash
# Build the local Python images used by the tests, the demo and the benchmark, from Debian
# packages alone (no image registry needed): debootstrap a minimal bookworm root with
# python3 and import it. Skips an image that already exists.
#
#   scripts/ensure-test-image.sh            # codeact-sandbox/python:bookworm   (~80 s, ~160 MB)
#   scripts/ensure-test-image.sh --data     # also codeact-sandbox/python-data:bookworm with
#                                           # numpy, pandas, matplotlib (~150 s, ~1.3 GB)
#   scripts/ensure-test-image.sh --bench    # also codeact-sandbox/python-bench:bookworm: the data
#                                           # stack plus python3-ipykernel (npm run bench)
#   scripts/ensure-test-image.sh --notebook # also codeact-sandbox/python-notebook:bookworm: python3 with
#                                           # Jupyter's kernel and executor (an exported notebook re-run)
#   scripts/ensure-test-image.sh --pip      # also codeact-sandbox/python-pip:bookworm: python3 with
#                                           # pip (pip install --target through the network proxy)
#   scripts/ensure-test-image.sh --debian   # also debian:bookworm-slim, a bare minbase root (~40 s,
#                                           # ~80 MB): the base of the data image's Debian route
#
# The Debian base is imported under the official image's own name on purpose: the data image's
# Debian route builds FROM debian:bookworm-slim, and the name is part of its recipe hash, so the
# tests build exactly the image (and tag) a user with a registry gets, through the same code,
# with nothing configured for tests. A later `docker pull debian:bookworm-slim` simply replaces it.
set -euo pipefail
log() { echo "[ensure-test-image] $*" >&2; }
# The archive apt already uses here (or $DEBIAN_MIRROR); no mirror host is written in this project.
MIRROR=
SUITE=${DEBIAN_SUITE:-bookworm}

build() { # name extra-packages [packages installed afterwards with apt inside the root] [command]
  local name=$1 include=$2 later=${3:-} cmd=${4:-'["python3"]'}
  if docker image inspect "$name" >/dev/null 2>&1; then log "$name exists"; return; fi
  if ! command -v debootstrap >/dev/null 2>&1; then
    log "installing debootstrap"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
  fi
  if [ -z "$MIRROR" ]; then
    MIRROR=$(bash "$(dirname "$0")/lib/debian-mirror.sh") || exit 1
    log "Debian archive: $MIRROR"
  fi
  local root
  root=$(mktemp -d /var/tmp/codeact-rootfs.XXXXXX)
  trap 'rm -rf "$root"' RETURN
  log "debootstrap $SUITE with ${include:-nothing more} into $root"
  debootstrap --variant=minbase ${include:+--include="$include"} "$SUITE" "$root" "$MIRROR" >"$root.log" 2>&1 \
    || { tail -30 "$root.log" >&2; rm -f "$root.log"; return 1; }
  rm -f "$root.log"
  if [ -n "$later" ]; then
    # Some packages (python3-zmq for ipykernel) do not configure inside debootstrap's second
    # stage; apt in the finished root, with /proc and /dev, installs them normally.
    log "installing $later"
    mount -t proc proc "$root/proc"
    mount --bind /dev "$root/dev"
    local status=0
    chroot "$root" sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ${later//,/ }" \
      >"$root.log" 2>&1 || status=$?
    umount "$root/dev" "$root/proc"
    if [ "$status" -ne 0 ]; then tail -30 "$root.log" >&2; rm -f "$root.log"; return 1; fi
    rm -f "$root.log"
  fi
  # Smaller image: no apt lists or package caches.
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  log "importing $name"
  tar -C "$root" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change "CMD $cmd" - "$name" >/dev/null
  log "$name ready"
}

build codeact-sandbox/python:bookworm python3
for arg in "$@"; do
  case "$arg" in
    --data) build codeact-sandbox/python-data:bookworm python3,python3-numpy,python3-pandas,python3-matplotlib ;;
    --notebook) build codeact-sandbox/python-notebook:bookworm python3 python3-ipykernel,python3-nbclient ;;
    --pip) build codeact-sandbox/python-pip:bookworm python3,python3-pip ;;
    --debian) build debian:bookworm-slim '' '' '["bash"]' ;;
    --bench) build codeact-sandbox/python-bench:bookworm python3,python3-numpy,python3-pandas,python3-matplotlib python3-ipykernel,python3-jupyter-client ;;
    *) log "unknown option $arg"; exit 2 ;;
  esac
done
