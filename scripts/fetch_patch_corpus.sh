#!/usr/bin/env bash
# Downloads the real-patch corpus into a project-local folder that git ignores
# (.ci-cache/patch-corpus, or $LOOMFS_PATCH_CORPUS): the source distributions of two
# released versions of pluggy (0.13.1 and 1.0.0, pure Python, about 110 kB together),
# whose upstream change adds, deletes, renames and modifies files and keeps one without
# a final newline. tests/patchkit.py makes the `diff -ruN`, `git diff -M` and V4A
# patches of that change from them.
# Each file comes from its pinned registry URL and is checked against its SHA-256
# before it is kept (a mismatch is deleted and fails the run); one already there with
# the right hash is not downloaded again. The download is announced on stderr before
# it starts. When a file cannot be had it exits 1 with the reason: the patch tests
# must never be skipped quietly.
set -euo pipefail
cd "$(dirname "$0")/.."

DIR=${LOOMFS_PATCH_CORPUS:-$PWD/.ci-cache/patch-corpus}
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
FILES="https://files.pythonhosted.org/packages"
PINS=(  # file name, URL, sha256
  "pluggy-0.13.1.tar.gz"
  "$FILES/f8/04/7a8542bed4b16a65c2714bf76cf5a0b026157da7f75e87cc88774aa10b14/pluggy-0.13.1.tar.gz"
  "15b2acde666561e1298d71b523007ed7364de07029219b604cf808bfa1c765b0"
  "pluggy-1.0.0.tar.gz"
  "$FILES/a1/16/db2d7de3474b6e37cbb9c008965ee63835bba517e22cdb8c35b5116b5ce1/pluggy-1.0.0.tar.gz"
  "4224373bacce55f955a878bf9cfa763c1e360858e330072059e10bad68531159"
)

say() { echo "fetch_patch_corpus.sh: $*" >&2; }

die() {
  say "$*"
  echo "fetch_patch_corpus.sh: the real-patch tests (tests/test_patchkit.py) cannot run without it" >&2
  exit 1
}

sha256_of() { "$PY" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$1"; }

mkdir -p "$DIR"
# A .gitignore of '*' inside the folder keeps it out of git wherever it is.
[ -f "$DIR/.gitignore" ] || echo '*' >"$DIR/.gitignore"

for ((i = 0; i < ${#PINS[@]}; i += 3)); do
  name=${PINS[i]} url=${PINS[i + 1]} want=${PINS[i + 2]}
  dest="$DIR/$name"
  if [ -f "$dest" ] && [ "$(sha256_of "$dest")" = "$want" ]; then
    continue
  fi
  say "downloading $name (a released pluggy sdist, tens of kB; the real-patch tests diff two versions) into $DIR"
  "$PY" - "$url" "$dest.part" <<'EOF' || { rm -f "$dest.part"; die "could not download $url"; }
import shutil, sys, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1], timeout=120) as answer, open(sys.argv[2], "wb") as out:
        shutil.copyfileobj(answer, out)
except OSError as exc:  # URLError and timeouts too
    sys.exit(f"fetch_patch_corpus.sh: {exc}")
EOF
  got=$(sha256_of "$dest.part")
  if [ "$got" != "$want" ]; then
    rm -f "$dest.part"
    die "$name has SHA-256 $got, not the pinned $want; not kept"
  fi
  mv "$dest.part" "$dest"
done
