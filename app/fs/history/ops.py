"""git_log, git_show and git_diff on one root: the history tools' entry points.

Each is its own module (`log.py`, `show.py`, `diff.py`), built from `gitdir`
(the call's `.git` handle), `store` (objects, by bounded decoders of the
server's own), `revs`, `walk`, `trees`, `listing` and `denied`, and bounded by
pages that continue by cursor, a commit budget, a byte budget per call and the
output cap.

Deny rules apply to every path at every commit: a denied path is refused as
an argument, pruned from file lists and diffs (counted in `note`), and a file
whose content equals a denied file's in the same history has its content
withheld. Commit messages and author names are shown as recorded.
"""

from __future__ import annotations

from app.fs.history.diff import DIFF_CUT, DiffFile, DiffResult, git_diff
from app.fs.history.log import LogCommit, LogResult, git_log
from app.fs.history.show import FileChange, ShowResult, git_show

__all__ = ["DIFF_CUT", "DiffFile", "DiffResult", "FileChange", "LogCommit", "LogResult",
           "ShowResult", "git_diff", "git_log", "git_show"]
