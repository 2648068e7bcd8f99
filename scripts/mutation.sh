#!/usr/bin/env bash
# Mutation testing of the core (not in CI: minutes per module).
#
#   scripts/mutation.sh                      # every core module
#   scripts/mutation.sh app/fs/change/atomic.py  # one or more modules
#   MAX_CHILDREN=1 scripts/mutation.sh ...   # parallel test processes (default 2)
#   MAX_VMEM_KB=...                          # address space per process (default 4 GiB)
#   SURVIVORS=1 scripts/mutation.sh app/fs/change/atomic.py
#                                            # re-test only the last run's survivors
#
# Configuration is [tool.mutmut] in pyproject.toml: the core modules (`only_mutate`) and, per
# module, the tests that cover it ([tool.mutmut.module_tests]). Each module runs in its own copy
# of the project under .mutation/<module>/ (mutmut keeps its cache there, so a re-run only tests
# what changed), with mutmut narrowed to that module and its tests. The score per module is
#   killed / (mutants - listed equivalents)
# where "killed" counts mutants a test failed on, or that made the tests run out of time
# (a mutant that hangs the tests is caught too; the timeouts are shown apart).
# Equivalent mutants (no test can tell them apart) are listed with a one-line reason in
# tests/mutation-equivalents.txt; a survivor not in that list is printed and fails the run.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
cd "$here"
py="$here/.venv/bin/python"
[ -x "$py" ] || { echo "no .venv: python3 -m venv .venv && .venv/bin/pip install -e '.[test]'" >&2; exit 2; }
if ! "$here/.venv/bin/mutmut" --help >/dev/null 2>&1; then
    "$here/.venv/bin/pip" install -q 'mutmut>=3.8,<4'
fi
max_children="${MAX_CHILDREN:-2}"

if [ "$#" -gt 0 ]; then
    modules=("$@")
else
    mapfile -t modules < <("$py" - <<'EOF'
import tomllib
cfg = tomllib.load(open("pyproject.toml", "rb"))["tool"]["mutmut"]
for name in cfg["module_tests"]:
    if not name.endswith("__init__.py"):
        print(name)
EOF
)
fi

status=0
summary=()
for module in "${modules[@]}"; do
    slug="${module//\//_}"
    work="$here/.mutation/${slug%.py}"
    mkdir -p "$work"
    # A fresh copy of the project's files (tracked and new, not ignored); mutmut's cache stays.
    git ls-files -co --exclude-standard -z | grep -zv '^\.mutation/' \
        | tar --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -xf - -C "$work"
    "$py" - "$module" "$work/pyproject.toml" <<'EOF'
import re, sys, tomllib
module, path = sys.argv[1], sys.argv[2]
text = open(path).read()
cfg = tomllib.loads(text)["tool"]["mutmut"]
tests = cfg["module_tests"][module]
# Drop the [tool.mutmut*] tables and write one narrowed to this module.
text = re.sub(r"(?ms)^\[tool\.mutmut[^\n]*\n.*?(?=^\[(?!tool\.mutmut)|\Z)", "", text)
q = lambda xs: "[" + ", ".join(f'"{x}"' for x in xs) + "]"
text += (
    "\n[tool.mutmut]\n"
    f'source_paths = {q(cfg["source_paths"])}\n'
    f"only_mutate = {q([module])}\n"
    f'also_copy = {q(cfg["also_copy"])}\n'
    f'pytest_add_cli_args = {q(cfg["pytest_add_cli_args"])}\n'
    f"pytest_add_cli_args_test_selection = {q(tests)}\n"
)
open(path, "w").write(text)
EOF
    echo "== $module (tests: $(cd "$work" && "$py" -c 'import tomllib;print(" ".join(tomllib.load(open("pyproject.toml","rb"))["tool"]["mutmut"]["pytest_add_cli_args_test_selection"]))'))"
    # pytest's own temp root, private to this run: pytest sessions sharing the default one
    # delete each other's older directories (it keeps the last 3), which a running test
    # would see as its tree vanishing (a false kill).
    mkdir -p "$work/tmp"
    export PYTEST_DEBUG_TEMPROOT="$work/tmp"
    start=$(date +%s)
    names=()
    [ -n "${SURVIVORS:-}" ] || rm -f "$work/previous.meta"
    if [ -n "${SURVIVORS:-}" ] && [ -f "$work/mutants/$module.meta" ]; then
        # A changed test selection makes mutmut forget every result; the mutants killed
        # before stay killed (tests are only added), so they are carried over.
        "$py" -c '
import json, sys, os
meta, keep = sys.argv[1], sys.argv[2]
now = json.load(open(meta))["exit_code_by_key"]
old = json.load(open(keep))["exit_code_by_key"] if os.path.exists(keep) else {}
merged = {n: (old.get(n) if old.get(n) in (1, 3) else c) for n, c in now.items()}
json.dump({"exit_code_by_key": merged}, open(keep, "w"))' "$work/mutants/$module.meta" "$work/previous.meta"
        mapfile -t names < <("$py" -c '
import json, sys
codes = json.load(open(sys.argv[1]))["exit_code_by_key"]
print("\n".join(n for n, c in sorted(codes.items()) if c not in (1, 3)))' "$work/mutants/$module.meta")
    fi
    # At most 4 GiB of address space per process (MAX_VMEM_KB): a mutant that loops appending
    # to a list then fails with MemoryError, caught like any failure, instead of eating the
    # shared machine's memory until the timeout.
    if ! (cd "$work" && ulimit -v "${MAX_VMEM_KB:-4194304}" \
            && "$here/.venv/bin/mutmut" run --max-children "$max_children" "${names[@]}" \
            >mutmut.log 2>&1); then
        echo "   mutmut failed; see $work/mutmut.log" >&2
        tail -20 "$work/mutmut.log" >&2
        status=1
        continue
    fi
    secs=$(( $(date +%s) - start ))
    line=$("$py" - "$module" "$work" "$here/tests/mutation-equivalents.txt" "$secs" <<'EOF'
import json, sys
from collections import Counter
from pathlib import Path
module, work, eq_path, secs = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
meta = json.loads((work / "mutants" / (module + ".meta")).read_text())
codes = meta["exit_code_by_key"]
carried = 0
previous = work / "previous.meta"
if previous.exists():
    before = json.loads(previous.read_text())["exit_code_by_key"]
    for name, code in codes.items():
        if code is None and before.get(name) in (1, 3):
            codes[name] = before[name]
            carried += 1
equivalent = {}
for raw in eq_path.read_text().splitlines():
    raw = raw.strip()
    if raw and not raw.startswith("#"):
        name, _, reason = raw.partition(" ")
        equivalent[name] = reason.strip()
kind = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests",
        36: "timeout", -24: "timeout", 24: "timeout", 152: "timeout", 255: "timeout"}
count = Counter()
survivors = []
for name, code in sorted(codes.items()):
    k = kind.get(code, "other" if code is not None else "not run")
    if name in equivalent and k != "killed":
        k = "equivalent"
    count[k] += 1
    if k in ("survived", "no tests", "other", "not run"):
        survivors.append(f"{k}: {name}")
stale = [n for n in equivalent if n.startswith(module[:-3].replace("/", ".") + ".")
         and (n not in codes or kind.get(codes[n]) == "killed")]
scored = len(codes) - count["equivalent"]
score = 100.0 * (count["killed"] + count["timeout"]) / scored if scored else 100.0
for s in survivors:
    print("   ", s, file=sys.stderr)
for n in stale:
    print("    listed as equivalent but killed or gone:", n, file=sys.stderr)
print(f"{module}: {score:.1f}% killed ({count['killed'] + count['timeout']}/{scored}; "
      f"{count['equivalent']} equivalent, {count['timeout']} timeout, "
      f"{len(survivors)} surviving{f', {carried} kills carried over' if carried else ''}) "
      f"in {secs}s")
sys.exit(1 if survivors else 0)
EOF
) || status=1
    echo "   $line"
    summary+=("$line")
done

echo
echo "Mutation score per module (mutmut $("$here/.venv/bin/python" -c 'import importlib.metadata as m;print(m.version("mutmut"))'), MAX_CHILDREN=$max_children):"
for l in "${summary[@]}"; do echo "  $l"; done
exit "$status"
