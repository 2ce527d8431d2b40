#!/usr/bin/env bash
# The whole test run, as CI runs it. On a fresh Debian machine it first installs and starts what
# is missing (Docker engine, the local test image, gVisor, a Podman service with the test image,
# Chromium + code-server for the extension host, stress-ng for the last stage); whatever is
# already there is reused.
#   CODEACT_SKIP_HOST=1   skip the extension-host suites (e.g. a machine without Chromium)
set -euo pipefail
cd "$(dirname "$0")/.."
LOGS=test-results/logs
mkdir -p "$LOGS"
passed=0
failed=0
failed_stages=()
# Each stage's wall time, printed together at the end: where a slow run spent its time.
stage_names=()
stage_times=()
stage_started=$SECONDS
stage() {
  stage_close
  echo; echo "=== $* ==="
  stage_names+=("$*")
  stage_started=$SECONDS
}
stage_close() {
  if [ "${#stage_names[@]}" -gt "${#stage_times[@]}" ]; then stage_times+=($((SECONDS - stage_started))); fi
}
stage_report() {
  stage_close
  echo
  echo "=== time per stage (s) ==="
  local i
  for i in "${!stage_names[@]}"; do printf '%6d  %s\n' "${stage_times[$i]:-0}" "${stage_names[$i]}"; done
  printf '%6d  %s\n' "$SECONDS" "in all"
}

# Runs a mocha-based stage, keeps its log, and adds its counts to the totals.
counted() {
  local name=$1; shift
  local log="$LOGS/$name.log" status=0
  "$@" 2>&1 | tee "$log" || status=$?
  local p f
  # (grep finds nothing in a stage without failures: that must not end the script)
  p=$({ grep -Eo '^ +[0-9]+ passing' "$log" || true; } | awk '{s+=$1} END {print s+0}')
  f=$({ grep -Eo '^ +[0-9]+ failing' "$log" || true; } | awk '{s+=$1} END {print s+0}')
  passed=$((passed + p)); failed=$((failed + f))
  if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then failed=$((failed + 1)); fi
  if [ "$status" -ne 0 ] || [ "$f" -ne 0 ]; then failed_stages+=("$name:$status"); fi
  return 0
}

# The same for Python's unittest: "Ran N tests", then "OK" or "FAILED (failures=F, errors=E)", each
# optionally with skipped=S, unexpected successes=U. Subtests can make F exceed the tests that
# failed, so passed stops at 0.
unittested() {
  local name=$1 log="$LOGS/$1.log" status=0 n end f s; shift
  "$@" 2>&1 | tee "$log" || status=$?
  n=$({ grep -Eo '^Ran [0-9]+ tests?' "$log" || true; } | awk '{s+=$2} END {print s+0}')
  end=$({ grep -E '^(OK|FAILED)( \(.*\))?$' "$log" || true; } | tail -1)
  f=$({ grep -Eo '(failures|errors|unexpected successes)=[0-9]+' <<<"$end" || true; } | awk -F= '{s+=$2} END {print s+0}')
  s=$({ grep -Eo 'skipped=[0-9]+' <<<"$end" || true; } | awk -F= '{s+=$2} END {print s+0}')
  passed=$((passed + (n > f + s ? n - f - s : 0))); failed=$((failed + f))
  if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then failed=$((failed + 1)); fi
  if [ "$status" -ne 0 ] || [ "$f" -ne 0 ]; then failed_stages+=("$name:$status"); fi
  return 0
}

# What failed, once more at the very end where a reader of a long log looks first: mocha's failure
# reports (from "N failing" on), else the stage's last lines (a stage that ended non-zero without a
# failing test: a crash, a hook, a check after the tests).
recap() {
  local entry name status log
  for entry in "${failed_stages[@]}"; do
    name=${entry%%:*}; status=${entry##*:}; log="$LOGS/$name.log"
    echo
    echo "=== failed: $name (exit $status; whole log: $log) ==="
    if grep -qE '^ +[0-9]+ failing' "$log"; then
      sed -n '/^ \+[0-9]\+ failing/,$p' "$log"
    else
      tail -n 40 "$log"
    fi
  done
}

stage "engine and test image"
bash scripts/ensure-docker.sh
bash scripts/ensure-test-image.sh --debian --notebook --pip
bash scripts/ensure-sshd.sh
bash scripts/ensure-runsc.sh
bash scripts/ensure-podman.sh --rootless
bash scripts/ensure-stress.sh
bash scripts/ensure-python-tools.sh
# The extension host (Node 24, and code-server, whose native modules build for about two minutes
# on a fresh cache) installs beside the stages that need neither; the unit stage is the first that
# needs it (a unit test runs the command line under that Node, to prove its compile cache).
# In a process group of its own (setsid), so that a run that ends early takes all of it along.
host_install=
if [ "${CODEACT_SKIP_HOST:-}" != 1 ]; then
  setsid bash scripts/ensure-vscode-host.sh >"$LOGS/vscode-host-install.log" 2>&1 &
  host_install=$!
  trap 'if [ -n "$host_install" ]; then kill -TERM -- "-$host_install" 2>/dev/null || true; fi' EXIT
fi
# Waits for that install and shows what it said; a failed install ends the run, as it did in line.
host_installed() {
  [ -n "$host_install" ] || return 0
  local status=0
  wait "$host_install" || status=$?
  host_install=
  trap - EXIT
  cat "$LOGS/vscode-host-install.log"
  return "$status"
}

stage "typecheck, lint, bundle"
npx tsc --noEmit -p .
npx eslint src test/unit test/docker
if /usr/bin/python3 -m flake8 --version >/dev/null 2>&1; then
  /usr/bin/python3 scripts/lint-runner.py
  /usr/bin/python3 -m flake8 scripts/lint-runner.py test/python
else
  echo "flake8 skipped: Debian's python3-flake8 is not installed (scripts/ensure-python-tools.sh said why)"
fi
node esbuild.mjs
node scripts/smoke-bundle.mjs

stage "runner tests (Python unittest, the host's python3)"
unittested python python3 -B -m unittest discover -s test/python -t test/python

stage "Docker tests (real engine)"
counted docker npx mocha --config test/.mocharc.docker.json

stage "extension host's install (begun in the first stage)"
host_installed

stage "unit tests"
counted unit npx mocha --config test/.mocharc.unit.json

stage "run card page (Chromium; hosted by the MCP Apps library's AppBridge)"
if [ -x /usr/bin/chromium ]; then
  counted card bash -c 'npx tsc -p test/card && npx eslint test/card && npx mocha --config test/.mocharc.card.json'
else
  echo "skipped: no Chromium at /usr/bin/chromium (scripts/ensure-vscode-host.sh installs it)"
fi

stage "Docker tests under gVisor (runsc: the subset in .mocharc.docker-runsc.json)"
if docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"'; then
  counted docker-runsc env CODEACT_TEST_RUNTIME=runsc npx mocha --config test/.mocharc.docker-runsc.json
else
  echo "skipped: the engine has no runsc runtime (scripts/ensure-runsc.sh said why)"
fi

stage "Docker tests under Podman (rootful service: the subset in .mocharc.docker-podman.json)"
PODMAN_HOST=unix:///run/codeact-podman/podman.sock
if DOCKER_HOST=$PODMAN_HOST docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
  # The rootless service, where it answers, is asked only whether it can enforce the limits.
  rootless=/run/user/$(id -u codeact-rootless 2>/dev/null || echo none)/podman.sock
  [ -S "$rootless" ] || rootless=
  counted docker-podman env DOCKER_HOST=$PODMAN_HOST CODEACT_TEST_ENGINE=podman CODEACT_TEST_PODMAN_ROOTLESS_HOST=${rootless:+unix://$rootless} \
    npx mocha --config test/.mocharc.docker-podman.json
else
  echo "skipped: no Podman service answers at $PODMAN_HOST (scripts/ensure-podman.sh said why)"
fi

if [ "${CODEACT_SKIP_HOST:-}" != 1 ]; then
  stage "extension host tests (real VS Code + agent mode)"
  bash scripts/ensure-vscode-host.sh
  counted host node test/host/runHostTests.mjs
fi

# The timing-sensitive suites (.mocharc.stress*.json; the stages above leave them out) run once, with
# every core kept busy: a test that assumed how fast the machine is (a runner ready, a spare made,
# a sandbox removed by some moment) fails here rather than on a slow machine later. Each runs under
# the conditions of its engine's stage above.
timing_suites() {
  counted stress-docker npx mocha --config test/.mocharc.stress.json
  if docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"'; then
    counted stress-docker-runsc env CODEACT_TEST_RUNTIME=runsc npx mocha --config test/.mocharc.stress-runsc.json
  else
    echo "gVisor part skipped: the engine has no runsc runtime"
  fi
  if DOCKER_HOST=$PODMAN_HOST docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
    counted stress-docker-podman env DOCKER_HOST=$PODMAN_HOST CODEACT_TEST_ENGINE=podman npx mocha --config test/.mocharc.stress-podman.json
  else
    echo "Podman part skipped: no Podman service answers at $PODMAN_HOST"
  fi
}
stage "timing-sensitive suites, every core busy (stress-ng)"
if command -v stress-ng >/dev/null 2>&1; then
  # It ends with this script, whatever ends it: the trap below on exit, the kernel's parent-death
  # signal (setpriv) should the script be killed outright, and its own --timeout at the very worst.
  setpriv --pdeathsig TERM stress-ng --cpu "$(nproc)" --timeout 3600s --quiet &
  stress_pid=$!
  stop_stress() { kill "$stress_pid" 2>/dev/null || true; wait "$stress_pid" 2>/dev/null || true; }
  trap stop_stress EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  timing_suites
  stop_stress
  trap - EXIT INT TERM
else
  echo "no stress-ng (scripts/ensure-stress.sh said why): these suites run without the load"
  timing_suites
fi

stage "package"
npx vsce package --no-dependencies --allow-missing-repository --no-rewrite-relative-links --out dist/codeact-sandbox.vsix
node scripts/check-package.mjs dist/codeact-sandbox.vsix

stage_report
[ "${#failed_stages[@]}" -eq 0 ] || recap
echo
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
