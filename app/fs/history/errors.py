"""What the history tools say about a repository they will not read, or an object in it.

Every refusal about an object names it (its first 12 hex digits) and says what
is wrong, in the server's words: missing, corrupt (a stream longer or shorter
than its header, a delta that loops, a tree out of order, an id that is not
its content's), too large, or past the call's work budget.
"""

from __future__ import annotations

from app.errors import LoomError, NotFound


def short(sha: bytes | str) -> str:
    text = sha.decode("ascii", "replace") if isinstance(sha, bytes) else sha
    return text[:12]


class RepoRefused(LoomError):
    rule = "git"


class ObjectMissing(NotFound):
    def __init__(self, sha: bytes | str) -> None:
        super().__init__(f"object {short(sha)} is missing from the repository")


class CorruptObject(LoomError):
    rule = "git"

    def __init__(self, sha: bytes | str, why: str) -> None:
        super().__init__(f"object {short(sha)} is corrupt: {why}")


class ObjectTooLarge(LoomError):
    rule = "size"


class WorkSpent(LoomError):
    """The call read as many repository bytes as one call may (`Meter`)."""

    rule = "size"


class Meter:
    """Bytes of repository data one call has inflated or built, against its budget.

    Every decoder reports what it produced, so no sequence of objects, however
    each is bounded, can keep one call busy past the budget."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.spent = 0

    def spend(self, n: int) -> None:
        self.spent += n
        if self.spent > self.budget:
            raise WorkSpent(
                f"this call read {self.budget >> 20} MiB of repository objects, as much as one "
                "call may"
            )
