"""What one search call was asked, checked once: the options built from the tool's arguments.

`FilesOptions` (search_files) and `TextOptions` (search_text) hold every argument of the call
and every limit it runs under (the page, the output bound, the byte budgets). Building one
refuses a bad argument in the server's words before anything is opened, in a fixed order (the
query, context and output mode; the number of `exclude` globs; then each glob), so the code
that reads them never checks them again. The matcher, the walk and the sink are built from
them, once per call; nothing below the tool handler takes the arguments one by one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.errors import BadArgument
from app.fs.filters.glob import compile_glob

MAX_QUERY = 1000
MAX_CONTEXT = 10
MAX_EXCLUDE = 64
CONTENT, FILES, COUNT = "content", "files_with_matches", "count"
OUTPUT_MODES = (CONTENT, FILES, COUNT)


@dataclass(frozen=True, kw_only=True)
class WalkOptions:
    """What both searches take: where to walk, what to leave out, and the page."""

    path: str = ""  # the folder searched, relative to the root ('' is the root)
    exclude: Sequence[str] = ()  # globs whose matches, files or folders, are skipped
    no_ignore: bool = False  # true: .gitignore/.ignore/.rgignore files are not read
    offset: int = 0
    limit: int  # most items on the page (already clamped to max_search_results)
    cap: int  # max_output_chars: the page's bound in characters
    cursor: str = ""  # a previous page's next_cursor: where this one resumes (`cursor.py`)

    def identity(self) -> tuple[str, ...]:
        """What a cursor is bound to besides the root: the tool and its arguments but
        the page's (`offset`, `limit`, `cursor`)."""
        raise NotImplementedError

    def _check_walk(self, pattern: str) -> None:
        """A cursor with an offset, the `exclude` globs, then `pattern` and each of them
        compiled: a bad glob is refused before anything is opened."""
        if self.cursor and self.offset:
            raise BadArgument("pass cursor or offset, not both")
        object.__setattr__(self, "exclude", tuple(self.exclude))  # a list: copied, frozen
        if len(self.exclude) > MAX_EXCLUDE:
            raise BadArgument(f"exclude takes at most {MAX_EXCLUDE} globs")
        compile_glob(pattern)
        for g in self.exclude:
            compile_glob(g)


@dataclass(frozen=True, kw_only=True)
class FilesOptions(WalkOptions):
    """search_files: names matching `pattern` (a glob) under `path`."""

    pattern: str

    def __post_init__(self) -> None:
        self._check_walk(self.pattern)

    def identity(self) -> tuple[str, ...]:
        return ("search_files", self.pattern, self.path, str(self.no_ignore), *self.exclude)


@dataclass(frozen=True, kw_only=True)
class TextOptions(WalkOptions):
    """search_text: lines matching `query` in the files under `path` that `file_glob` keeps."""

    query: str
    file_glob: str = "*"
    case_sensitive: bool = True
    regex: bool = False  # the query is an RE2 pattern, else literal text
    context: int = 0  # lines shown before and after each match
    output_mode: str = CONTENT
    file_limit: int  # bytes: a larger file is skipped (max_search_file_bytes)
    budget: int  # bytes one call may scan, matching lines charged too (max_search_bytes)

    def __post_init__(self) -> None:
        if not self.query:
            raise BadArgument("query must not be empty")
        if len(self.query) > MAX_QUERY:
            raise BadArgument(f"query is longer than {MAX_QUERY} characters")
        if not 0 <= self.context <= MAX_CONTEXT:
            raise BadArgument(f"context must be between 0 and {MAX_CONTEXT} lines")
        if self.output_mode not in OUTPUT_MODES:
            raise BadArgument(f"output_mode must be one of {', '.join(OUTPUT_MODES)}")
        self._check_walk(self.file_glob)

    def identity(self) -> tuple[str, ...]:
        return ("search_text", self.query, self.path, self.file_glob, str(self.case_sensitive),
                str(self.regex), str(self.context), self.output_mode, str(self.no_ignore),
                *self.exclude)

    @property
    def want(self) -> int:
        """Items found before the search stops: the page and one more (`has_more`)."""
        return self.offset + self.limit + 1
