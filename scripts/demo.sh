#!/usr/bin/env bash
# The main job from a terminal, on default settings: the README's own example ("plot monthly
# revenue from data/sales.csv and tell me the best month"). The data image is built on first use
# (minutes, with its progress shown); then the program a model would write runs in a sandbox, and
# the demo prints exactly what the model receives, where the chart was saved, and the notebook the
# session was exported to.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-docker.sh
node esbuild.mjs >/dev/null
say() { echo "[demo] $*" >&2; }

# The data image builds FROM debian:bookworm-slim (or python:3.12-slim). Where no image registry
# answers, the Debian base is made from Debian's own archive instead.
if ! docker image inspect debian:bookworm-slim >/dev/null 2>&1 && ! docker image inspect python:3.12-slim >/dev/null 2>&1 \
  && ! timeout 120 docker pull -q debian:bookworm-slim >/dev/null 2>&1; then
  say "no image registry answered; making debian:bookworm-slim from Debian's archive"
  bash scripts/ensure-test-image.sh --debian
fi

say "node dist/cli.js prepare   (the data image: built once, reused afterwards)"
node dist/cli.js prepare

out=$(mktemp -d "${TMPDIR:-/tmp}/codeact-demo.XXXXXX")
session="demo-$$"
# The demo leaves nothing behind: its session is removed at the end, and --spares 0 makes no
# spare for a next session.
trap 'node dist/cli.js cleanup --session "$session" >/dev/null 2>&1 || true' EXIT
say "node dist/cli.js run --session $session --spares 0 --workspace examples/revenue --file data/sales.csv --output revenue.png --artifacts $out examples/revenue/plot_revenue.py"
say "what the model receives:"
node dist/cli.js run --session "$session" --spares 0 --workspace examples/revenue --file data/sales.csv --output revenue.png \
  --artifacts "$out" examples/revenue/plot_revenue.py
node dist/cli.js export --session "$session" --artifacts "$out" --out "$out/revenue.ipynb"
say "the session as a Jupyter notebook: $out/revenue.ipynb (code --open it, or jupyter notebook)"
