"""What the per-call containment checks cost, against the call they guard.

    .venv/bin/python benchmarks/root_checks.py [--runs N]

In one process, on a warm cache, times (median of `--runs` rounds of 20,000
calls each, interleaved):

- alive:   `Root.check_alive()` alone (one stat of the root's path, to
           notice a root folder deleted or replaced while serving);
- open:    `open_file` of a small file three folders down, with the check, then
           close (the least work a read tool does);
- open-:   the same with the check skipped (monkeypatched), the baseline;
- walk:    a one-level walk of a 200-entry folder with the server's own files
           protected by identity (one set test per folder);
- walk-:   the same walk with no identities to test.

Prints each median in microseconds per call and the median of the per-round
ratios open/open- and walk/walk-.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from app.security.deny import DenyRules
from app.security.protected import Protected
from app.security.resolve import Root
from app.security.walk import Walker

N = 20_000


def per_call(fn, n: int = N) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    runs = ap.parse_args().runs
    with tempfile.TemporaryDirectory() as tmp:
        top = Path(tmp) / "root"
        (top / "a" / "b" / "c").mkdir(parents=True)
        (top / "a" / "b" / "c" / "f.txt").write_text("x\n")
        for i in range(200):
            (top / "a" / f"e{i:03}.txt").write_text("y\n")
        (Path(tmp) / "cfg.toml").write_text("z\n")
        protected = Protected()
        protected.hold_paths([str(Path(tmp) / "cfg.toml")])

        def root(ids: Protected | None) -> Root:
            return Root(name="r", role="reference", permissions=["read"], real=str(top),
                              rules=DenyRules(identities=ids), max_read_bytes=1 << 20)

        with_ids, without = root(protected), root(None)
        unchecked = root(protected)
        # A stub over the method (the check left out): mypy has no type for that but an ignore.
        unchecked.check_alive = lambda: None  # type: ignore[method-assign]

        def opener(r: Root):
            def go() -> None:
                r.open_file("a/b/c/f.txt", op="read_text_file").close()
            return go

        def walker(r: Root):
            def go() -> None:
                for _ in Walker(r, ("a",), 1):
                    pass
            return go

        rows: dict[str, list[float]] = {k: [] for k in ("alive", "open", "open-", "walk", "walk-")}
        for _ in range(runs):
            rows["alive"].append(per_call(with_ids.check_alive))
            rows["open"].append(per_call(opener(with_ids)))
            rows["open-"].append(per_call(opener(unchecked)))
            rows["walk"].append(per_call(walker(with_ids), N // 20))
            rows["walk-"].append(per_call(walker(without), N // 20))
        med = {k: statistics.median(v) for k, v in rows.items()}
        for k, v in med.items():
            print(f"{k:6} {v:8.2f} us/call   (runs: {', '.join(f'{x:.2f}' for x in rows[k])})")
        for a, b in (("open", "open-"), ("walk", "walk-")):
            ratios = [x / y for x, y in zip(rows[a], rows[b], strict=True)]
            print(f"{a}/{b} = {statistics.median(ratios):.3f} (median of per-round ratios)")
        print(f"cpu count {os.cpu_count()}")


if __name__ == "__main__":
    main()
