"""`apply_patch` and `edit_file` on one file from two threads at once: each holds the
entry's keys from its read to its rename, so they take turns and neither loses the
other's change. The edit thread steps line 1 (`A<n>` to `A<n+1>`), the patch thread the
last line (`B<n>` to `B<n+1>`, its context the lines between): every call of each must
succeed, and the file ends with both counts."""

from __future__ import annotations

import threading

from app.fs.change.edit import TextEdit, edit_file
from app.fs.change.patch import apply_patch
from tests.fs.conftest import populated_ws

ROUNDS = 40
MIDDLE = [f"middle {n}" for n in range(6)]


def _patch(n: int) -> str:
    """A hunk changing the last line `B<n>` to `B<n+1>`, with three lines of context."""
    before = "\n".join(f" {line}" for line in MIDDLE[-3:])
    return (f"--- a/race.txt\n+++ b/race.txt\n@@ -5,4 +5,4 @@\n{before}\n"
            f"-B{n}\n+B{n + 1}\n")


def test_edits_and_patches_on_one_file_at_once_lose_no_change(tmp_path) -> None:
    disk, root = populated_ws(tmp_path)
    target = disk.ws / "race.txt"
    target.write_text("\n".join(["A0", *MIDDLE, "B0"]) + "\n")
    failures: list[BaseException] = []
    start = threading.Barrier(2)

    def edits() -> None:
        start.wait()
        for n in range(ROUNDS):
            try:
                edit_file(root, "race.txt", [TextEdit(old_text=f"A{n}\n", new_text=f"A{n + 1}\n")],
                          max_output_chars=1000)
            except BaseException as exc:  # collected, asserted below
                failures.append(exc)

    def patches() -> None:
        start.wait()
        for n in range(ROUNDS):
            try:
                apply_patch(root, _patch(n))
            except BaseException as exc:  # collected, asserted below
                failures.append(exc)

    threads = [threading.Thread(target=edits), threading.Thread(target=patches)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert target.read_text() == "\n".join([f"A{ROUNDS}", *MIDDLE, f"B{ROUNDS}"]) + "\n"
