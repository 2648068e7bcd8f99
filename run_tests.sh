#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh machine, then runs it all (CI runs exactly
# this). Extra arguments go to pytest. Each install is announced on stderr before it starts;
# nothing here prompts (CI has no terminal): pip runs with --no-input, apt-get with -y and
# stdin from /dev/null.
#   - .venv with this package (editable) and its test extras, when pyproject.toml changed
#   - ripgrep from apt (as root), for the tests that compare searches against it
#   - chromium and chromium-driver from apt (as root), for the owner's page browser tests
#   - Node 22, the MCP conformance suite and Inspector (scripts/install_node.sh), for
#     tests/clients, into .ci-cache/node-tools ($LOOMFS_NODE_TOOLS), which git ignores
#   - two released pluggy sdists, pinned and hash-checked (scripts/fetch_patch_corpus.sh), for
#     the real-patch tests, into .ci-cache/patch-corpus ($LOOMFS_PATCH_CORPUS), which git ignores
set -euo pipefail
cd "$(dirname "$0")"

say() { echo "run_tests.sh: $*" >&2; }

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  say "creating .venv with $PY (a virtual environment for the package and its test tools)"
  "$PY" -m venv .venv
fi

# The editable install is what the tests need: they import app/ from this working tree, and the
# console script they start runs it too, so an edit needs no reinstall. PYTHONWARNINGS drops the
# one notice setuptools prints for it ("folders ... with the same name as your package ... may
# take precedence"): the console script never imports from the current directory, and here the
# folder of that name is the package itself. The stamp skips pip while pyproject.toml is unchanged.
STAMP=.venv/.loomfs-test-install
if ! cmp -s pyproject.toml "$STAMP"; then
  say "installing loom-fs-mcp (editable) and its test extras (pytest, hypothesis, ruff, mypy, ...) into .venv with pip"
  PIP=(.venv/bin/python -m pip install -q --no-input --disable-pip-version-check)
  "${PIP[@]}" --upgrade pip >/dev/null
  PYTHONWARNINGS="ignore:Editable installation" "${PIP[@]}" -e '.[test]'
  cp pyproject.toml "$STAMP"
fi

if ! command -v rg >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing ripgrep with apt-get (the differential search tests compare against it)"
    (export DEBIAN_FRONTEND=noninteractive
     apt-get update -qq && apt-get install -y -qq ripgrep) </dev/null >/dev/null 2>&1 || true
  fi
  command -v rg >/dev/null 2>&1 ||
    say "ripgrep (rg) is not installed: the tests that compare searches against it will be skipped"
fi
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing chromium and chromium-driver with apt-get (the owner's page tests run in headless Chromium)"
    (export DEBIAN_FRONTEND=noninteractive
     apt-get update -qq && apt-get install -y -qq chromium chromium-driver) </dev/null >/dev/null 2>&1 || true
  fi
  command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1 ||
    say "chromium or chromedriver is not installed: the browser tests of the owner's page will be skipped (failed under CI=true)"
fi
scripts/install_node.sh  # says what it downloads before it does; fails loudly
scripts/fetch_patch_corpus.sh  # the same: skipped when the hash-checked files are there

# With arguments: one pytest run, as given. Without: the suite on parallel workers, then the
# tests marked `serial` alone (they read the wall clock or count a racing thread's work, which a
# second worker's load would skew; tests/conftest.py lists them). Exit code 5 (no tests
# collected) from either run is a failure.
set +e
if [ "$#" -gt 0 ]; then
  .venv/bin/python -m pytest "$@"
  rcs=($?)
else
  .venv/bin/python -m pytest -n auto --maxprocesses "${LOOMFS_TEST_WORKERS:-4}" \
    --dist worksteal -m "not serial" --durations=15
  rcs=($?)
  .venv/bin/python -m pytest -m serial --durations=5
  rcs+=($?)
fi
set -e
for rc in "${rcs[@]}"; do
  if [ "$rc" -eq 5 ]; then
    say "pytest collected no tests; that is a failure"
    exit 1
  fi
done
for rc in "${rcs[@]}"; do
  [ "$rc" -eq 0 ] || exit "$rc"
done
exit 0
