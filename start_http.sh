#!/usr/bin/env bash
# Set up (first run) and serve loom-fs-mcp over Streamable HTTP on 127.0.0.1:8000.
#   - creates .venv if missing and installs the package into it
#   - creates config/roots.toml from config/roots.example.toml if missing
#   - runs: loom-fs-mcp --transport http --config config/roots.toml [extra args...]
# /mcp needs a bearer token: with neither LOOMFS_TOKEN nor LOOMFS_TOKEN_FILE set, the first
# start makes one at ${XDG_STATE_HOME:-~/.local/state}/loom-fs-mcp/token (0600) and prints
# where it is and the client command lines that use it; later starts reuse it. --no-auth
# serves without one (loopback only). See docs/service.md, "The bearer token".
# Extra arguments pass through (e.g. --port 8001). Environment: LOOMFS_VENV, LOOMFS_TOKEN,
# LOOMFS_TOKEN_FILE, LOOMFS_ALLOWED_HOSTS, LOOMFS_ALLOWED_ORIGINS, LOOMFS_HOST, LOOMFS_PORT,
# XDG_STATE_HOME.
set -euo pipefail
cd "$(dirname "$0")"

PY=${PYTHON:-python3}
VENV=${LOOMFS_VENV:-.venv}   # an existing venv with loom-fs-mcp installed may be reused
if [ ! -x "$VENV/bin/loom-fs-mcp" ]; then
  echo "start_http.sh: first start: installing loom-fs-mcp and its dependencies into $VENV with pip" >&2
  if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
  fi
  PIP=("$VENV/bin/python" -m pip install -q --no-input --disable-pip-version-check)
  "${PIP[@]}" --upgrade pip >/dev/null
  # Editable, as run_tests.sh installs it (see there for why this one setuptools notice is dropped).
  PYTHONWARNINGS="ignore:Editable installation" "${PIP[@]}" -e .
fi

CONFIG=${LOOMFS_CONFIG:-config/roots.toml}
if [ ! -f "$CONFIG" ]; then
  cp config/roots.example.toml "$CONFIG"
  echo "created $CONFIG from config/roots.example.toml; edit it to declare your roots" >&2
fi

exec "$VENV/bin/loom-fs-mcp" --transport http --config "$CONFIG" "$@"
