#!/usr/bin/env bash
# Python tools the test run checks the project with, from Debian's packages: flake8 lints the
# sandbox runner and its tests, nbformat validates exported notebooks against Jupyter's own schema. Debian's own /usr/bin/python3 is the
# one asked (a python3 earlier on PATH, from pyenv say, does not see Debian's packages). Where they cannot be installed (not
# root, no apt), it says so and exits 0; the tests that need them then fail naming this script.
set -euo pipefail
log() { echo "[ensure-python-tools] $*" >&2; }
missing=()
/usr/bin/python3 -c 'import nbformat' 2>/dev/null || missing+=(python3-nbformat)
/usr/bin/python3 -m flake8 --version >/dev/null 2>&1 || missing+=(python3-flake8)
if [ "${#missing[@]}" -eq 0 ]; then log "nbformat and flake8 are installed"; exit 0; fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  log "missing ${missing[*]} and no way to install it"; exit 0
fi
log "installing ${missing[*]} from Debian"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
log "ready"
