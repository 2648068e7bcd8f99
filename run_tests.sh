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

set +e
.venv/bin/python -m pytest "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "run_tests.sh: pytest collected no tests; that is a failure" >&2
  exit 1
fi
exit "$rc"
