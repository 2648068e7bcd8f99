#!/usr/bin/env bash
# Installs the Node tools that tests/clients drives as real peers, into a
# project-local folder that git ignores (.ci-cache/node-tools, or
# $LOOMFS_NODE_TOOLS):
#   - Node >= 22.19 (the MCP Inspector 2.x needs it; the conformance suite
#     crashes on Node 20): the machine's own node when it is new enough, else
#     the npm package node-linux-<arch>@22, which ships the binary itself;
#   - @modelcontextprotocol/conformance and @modelcontextprotocol/inspector at
#     pinned versions, and the next conformance suite (the 2026-07-28
#     requirement set) in a folder of its own, since one npm prefix holds one
#     version of a package.
# It writes $DIR/tools.env (NODE=, CONFORMANCE_JS=, CONFORMANCE_NEXT_JS=,
# INSPECTOR_JS=) for the tests.
# Each download is announced on stderr (what, why, where) before it starts.
# A second run with the same pins does nothing but check. When npm or Node
# cannot be had it exits 1 with the reason: the client tests must never be
# skipped quietly.
set -euo pipefail
cd "$(dirname "$0")/.."

CONFORMANCE_PKG="@modelcontextprotocol/conformance@0.1.16"
CONFORMANCE_NEXT_PKG="@modelcontextprotocol/conformance@0.2.0-alpha.12"
INSPECTOR_PKG="@modelcontextprotocol/inspector@2.12.0"
NODE_RANGE="22"
DIR=${LOOMFS_NODE_TOOLS:-$PWD/.ci-cache/node-tools}
NPM_FLAGS=(--no-audit --no-fund --loglevel=error --prefer-offline)

say() { echo "install_node.sh: $*" >&2; }

die() {
  say "$*"
  echo "install_node.sh: the client tests (tests/clients) cannot run without it" >&2
  exit 1
}

mkdir -p "$DIR"
# A .gitignore of '*' inside the folder keeps it out of git wherever it is.
[ -f "$DIR/.gitignore" ] || echo '*' >"$DIR/.gitignore"

node_new_enough() {
  "$1" -e 'const [a, b] = process.versions.node.split(".").map(Number);
           process.exit(a > 22 || (a === 22 && b >= 19) ? 0 : 1)' 2>/dev/null
}

if ! command -v npm >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    say "npm is not installed; installing it with apt-get (it fetches Node 22 and the MCP test tools)"
    (export DEBIAN_FRONTEND=noninteractive  # never a prompt: CI has no terminal
     apt-get update -qq && apt-get install -y -qq npm) </dev/null >/dev/null 2>&1 || true
  fi
  command -v npm >/dev/null 2>&1 || die "npm is not installed and could not be installed"
fi

NODE=""
if command -v node >/dev/null 2>&1 && node_new_enough "$(command -v node)"; then
  NODE=$(command -v node)
else
  case "$(uname -m)" in
    x86_64 | amd64) arch=x64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) die "no node-linux package for machine type $(uname -m); install Node >= 22.19" ;;
  esac
  NODE="$DIR/node/node_modules/node-linux-$arch/bin/node"
  if ! { [ -x "$NODE" ] && node_new_enough "$NODE"; }; then
    say "no node >= 22.19 on PATH; downloading Node 22 (npm package node-linux-$arch, ~185 MB on disk) into $DIR/node"
    npm install "${NPM_FLAGS[@]}" --prefix "$DIR/node" "node-linux-$arch@$NODE_RANGE" >&2 ||
      die "npm could not install node-linux-$arch@$NODE_RANGE"
  fi
  [ -x "$NODE" ] && node_new_enough "$NODE" ||
    die "node-linux-$arch@$NODE_RANGE did not provide Node >= 22.19"
fi

# npm itself runs on whatever `node` is first on PATH: make that the new one.
export PATH="$(dirname "$NODE"):$PATH"
PKGS="$DIR/pkgs"
STAMP="$PKGS/.installed"
WANT="$CONFORMANCE_PKG $INSPECTOR_PKG"
if [ "$(cat "$STAMP" 2>/dev/null || true)" != "$WANT" ]; then
  mkdir -p "$PKGS"
  say "downloading the MCP conformance suite and Inspector (~145 MB on disk; the client tests drive them) into $PKGS"
  npm install "${NPM_FLAGS[@]}" --prefix "$PKGS" "$CONFORMANCE_PKG" "$INSPECTOR_PKG" >&2 ||
    die "npm could not install $WANT"
  echo "$WANT" >"$STAMP"
fi

NEXT="$DIR/pkgs-next"
NEXT_STAMP="$NEXT/.installed"
if [ "$(cat "$NEXT_STAMP" 2>/dev/null || true)" != "$CONFORMANCE_NEXT_PKG" ]; then
  mkdir -p "$NEXT"
  say "downloading the next MCP conformance suite (~50 MB on disk; the 2026-07-28 requirement set) into $NEXT"
  npm install "${NPM_FLAGS[@]}" --prefix "$NEXT" "$CONFORMANCE_NEXT_PKG" >&2 ||
    die "npm could not install $CONFORMANCE_NEXT_PKG"
  echo "$CONFORMANCE_NEXT_PKG" >"$NEXT_STAMP"
fi

CONFORMANCE_JS="$PKGS/node_modules/@modelcontextprotocol/conformance/dist/index.js"
CONFORMANCE_NEXT_JS="$NEXT/node_modules/@modelcontextprotocol/conformance/dist/index.js"
INSPECTOR_JS="$PKGS/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
for f in "$CONFORMANCE_JS" "$INSPECTOR_JS"; do
  [ -f "$f" ] || { rm -f "$STAMP"; die "installed package is missing $f"; }
done
[ -f "$CONFORMANCE_NEXT_JS" ] || { rm -f "$NEXT_STAMP"; die "installed package is missing $CONFORMANCE_NEXT_JS"; }
"$NODE" "$CONFORMANCE_JS" --version >/dev/null || die "the conformance suite does not start"
"$NODE" "$CONFORMANCE_NEXT_JS" --version >/dev/null || die "the next conformance suite does not start"

cat >"$DIR/tools.env" <<EOF
NODE=$NODE
CONFORMANCE_JS=$CONFORMANCE_JS
CONFORMANCE_NEXT_JS=$CONFORMANCE_NEXT_JS
INSPECTOR_JS=$INSPECTOR_JS
EOF
say "node $("$NODE" --version), $WANT $CONFORMANCE_NEXT_PKG ready in $DIR"
