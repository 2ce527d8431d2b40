#!/usr/bin/env bash
# Sets up and runs an example program through the CLI, exactly as the model would see it.
# Uses the small image python:3.12-slim (not the data image, which takes minutes to build), pulling it when a registry is reachable; where none
# is (an offline machine), builds a local Python image from Debian packages instead.
#   CODEACT_IMAGE=<image> npm run demo     # use another image
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-docker.sh
[ -f dist/cli.js ] || node esbuild.mjs

image=${CODEACT_IMAGE:-python:3.12-slim}
if ! docker image inspect "$image" >/dev/null 2>&1; then
  echo "[demo] pulling $image" >&2
  if ! timeout 120 docker pull "$image" >/dev/null 2>&1; then
    if [ -n "${CODEACT_IMAGE:-}" ]; then echo "[demo] cannot get $image" >&2; exit 1; fi
    echo "[demo] no registry reachable; building a local Python image from Debian instead" >&2
    bash scripts/ensure-test-image.sh
    image=codeact-sandbox/python:bookworm
  fi
fi

echo "[demo] node dist/cli.js run --image $image examples/hello_sandbox.py" >&2
node dist/cli.js run --image "$image" examples/hello_sandbox.py
