#!/usr/bin/env bash
# The stress stage of scripts/test.sh runs the timing-sensitive suites again while stress-ng keeps
# every core busy, so that no test can depend on how fast the machine is.
exec bash "$(dirname "$0")/ensure-debian-tool.sh" stress-ng stress-ng "the stress stage will be skipped"
