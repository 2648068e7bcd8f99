#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh machine, then runs it all.
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")"

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'

# Tools some tests drive as real peers (ripgrep for the search benchmark baseline).
if ! command -v rg >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && apt-get install -y -qq ripgrep) >/dev/null 2>&1 || true
fi
scripts/install_node.sh  # Node 22, MCP conformance suite, Inspector (tests/clients); fails loudly

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
    --dist worksteal -m "not serial"
  rcs=($?)
  .venv/bin/python -m pytest -m serial
  rcs+=($?)
fi
set -e
for rc in "${rcs[@]}"; do
  if [ "$rc" -eq 5 ]; then
    echo "run_tests.sh: pytest collected no tests; that is a failure" >&2
    exit 1
  fi
done
for rc in "${rcs[@]}"; do
  [ "$rc" -eq 0 ] || exit "$rc"
done
exit 0
