"""One ignore file's rules: the gitignore pattern language, compiled to RE2 sets.

The syntax, as ripgrep reads it: a pattern with no `/` but a trailing one
matches a name at any depth (`**/` is put in front); a pattern with a `/` (a
leading one included) is anchored to its file's directory. A trailing `/`
restricts it to directories, `!` re-includes, `#` starts a comment, `\\`
escapes; `*` and `?` stay within one name, `[...]` and `[!...]` are classes,
`**/`, `/**/` and `/**` cross directories (`**` elsewhere is `*`). Trailing
spaces are dropped unless escaped; `{a,b}` is literal, as in git. Within one
file the last pattern that matches decides (a dir-only pattern is passed over
for a file).

Patterns run on RE2 (linear time), because ignore files are content of the
root and may be hostile: `*a*a*a*a*b` on a long name costs what `*` does. One
file keeps at most `MAX_RULES` patterns (lines past them are dropped), compiled
in sets of `CHUNK` (a set of thousands of wildcard-heavy rules may not compile);
a line RE2 refuses is dropped, as ripgrep drops an invalid glob.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import re2

from app.fs import re2raw

MAX_RULES = 20_000  # per file; lines past it are dropped (real files hold a few hundred)
# Rules per RE2 set. One set of 10,000 wildcard-heavy rules fails to compile (the whole
# file was then ignored), at 20,000 RE2's simplifier writes a thousand lines to stderr,
# and compiling a set of 2,048 such rules peaks at about 50 MiB, of 1,024 at a few.
CHUNK = 1024
_OPTS = re2.Options()
_OPTS.log_errors = False
_OPTS.never_capture = True
_OPTS.max_mem = 64 << 20


def _class(p: bytes, i: int) -> tuple[bytes, int] | None:
    """The class at p[i] == '['; (regex, index after it), or None if unclosed."""
    j = i + 1
    negate = j < len(p) and p[j] in b"!^"
    if negate:
        j += 1
    members = bytearray()
    first = True
    while j < len(p):
        c = p[j]
        if c == ord("]") and not first:
            body = bytes(members)
            return (b"[^/" + body + b"]" if negate else b"[" + body + b"]"), j + 1
        first = False
        if c == ord("\\") and j + 1 < len(p):
            j += 1
            c = p[j]
        if c == ord("-") and members and j + 1 < len(p) and p[j + 1] != ord("]"):
            members += b"-"
        elif chr(c).isalnum() or c >= 0x80:
            members.append(c)
        else:
            members += b"\\x%02x" % c
        j += 1
    return None


def glob_regex(glob: bytes) -> bytes | None:
    """A gitignore glob (already stripped of `!`, `/` ends) as an RE2 pattern; None if invalid."""
    out = bytearray()
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if c == ord("*"):
            if glob.startswith(b"**", i):
                at_start = i == 0 or glob[i - 1] == ord("/")
                end = i + 2
                if at_start and (end == n or glob[end] == ord("/")):
                    if i == 0 and end == n:
                        out += b".*"
                    elif i == 0:  # `**/x`: any number of leading directories
                        out += b"(?:.*/)?"
                        end += 1
                    elif end == n:  # `x/**`: everything inside (the `/` is already out)
                        out += b".*"
                    else:  # `x/**/y`: zero or more directories
                        del out[-1:]
                        out += b"(?:/|/.*/)"
                        end += 1
                    i = end
                    continue
                out += b"[^/]*"
                i += 2
                continue
            out += b"[^/]*"
        elif c == ord("?"):
            out += b"[^/]"
        elif c == ord("["):
            cls = _class(glob, i)
            if cls is None:
                return None
            part, i = cls
            out += part
            continue
        elif c == ord("\\"):
            if i + 1 >= n:
                return None  # a dangling backslash: the line is invalid (as in ripgrep)
            i += 1
            out += b"\\x%02x" % glob[i]
        elif chr(c).isalnum() or c >= 0x80 or c == ord("/"):
            out.append(c)
        else:
            out += b"\\x%02x" % c
        i += 1
    return bytes(out)


class Rule(NamedTuple):
    negate: bool
    dir_only: bool
    on_name: bool  # no `/`: matched against the entry's name alone
    regex: bytes  # RE2, matched against the whole name (or path relative to the file)


def parse_line(raw: bytes) -> Rule | None:
    line = raw.rstrip(b"\r")
    if not line.endswith(b"\\ "):
        line = line.rstrip(b" \t")
    if not line or line.startswith(b"#"):
        return None
    negate = anchored = False
    if line.startswith((b"\\!", b"\\#")):
        line = line[1:]
    else:
        if line.startswith(b"!"):
            negate = True
            line = line[1:]
        if line.startswith(b"/"):
            line = line[1:]
            anchored = True
    dir_only = line.endswith(b"/")
    if dir_only:
        line = line[:-1]
    if not line:
        return None
    on_name = not anchored and b"/" not in line
    if line.endswith(b"/**"):
        line += b"/*"  # everything inside, not the directory itself
    regex = glob_regex(line)
    if regex is None:
        return None
    return Rule(negate, dir_only, on_name, regex)


Match = Callable[[bytes], list[int]]  # a string -> the indexes of the rules that match it


class _Side:
    """The rules matched against one string (names or paths): one RE2 set per `CHUNK` of
    them (one set for a file of the usual size). `match` gives indexes into `rule_of`."""

    __slots__ = ("match", "rule_of")

    def __init__(self, rules: list[tuple[int, Rule]]) -> None:
        self.rule_of: list[int] = []
        self.match: Match | None = None
        sets: list[tuple[Match, int]] = []
        for i in range(0, len(rules), CHUNK):
            base = len(self.rule_of)
            match = _compile(rules[i : i + CHUNK], self.rule_of)
            if match is not None:
                sets.append((match, base))
        if len(sets) == 1:
            self.match = sets[0][0]  # the binding's own call, as most files have
        elif sets:
            self.match = _joined(sets)


def _compile(rules: list[tuple[int, Rule]], rule_of: list[int]) -> Match | None:
    """One RE2 set of `rules` (the numbers of those it holds appended to `rule_of`), or None
    when it holds none or does not compile (its rules are then dropped, as a line RE2 refuses
    is, and as ripgrep drops an invalid glob)."""
    patterns = re2.Set.FullMatchSet(_OPTS)
    held = []
    for k, rule in rules:
        try:
            patterns.Add(rule.regex)
        except re2.error:
            continue
        held.append(k)
    if not held:
        return None
    try:
        patterns.Compile()
    except re2.error:
        return None
    rule_of.extend(held)
    return re2raw.set_match(patterns)  # the binding's own call: a list of set indexes


def _joined(sets: list[tuple[Match, int]]) -> Match:
    def match(s: bytes) -> list[int]:
        found: list[int] = []
        for one, base in sets:
            hit = one(s)
            if hit:
                found += [base + i for i in hit]
        return found

    return match


class IgnoreFile:
    """The rules of one ignore file. One RE2 set call per side (per `CHUNK` of its rules)
    says which rules match (a set never backtracks; if it runs out of memory it answers
    'none', i.e. shown)."""

    __slots__ = ("names", "paths", "rules")

    def __init__(self, rules: list[Rule]) -> None:
        self.rules = rules
        self.names = _Side([(k, r) for k, r in enumerate(rules) if r.on_name])
        self.paths = _Side([(k, r) for k, r in enumerate(rules) if not r.on_name])

    @classmethod
    def parse(cls, text: bytes, most: int = MAX_RULES) -> tuple[IgnoreFile | None, bool]:
        """The file's rules, up to `most` of them; and whether rules past them were dropped."""
        rules: list[Rule] = []
        lines = text.split(b"\n")
        for i, line in enumerate(lines):
            if len(rules) >= most:
                dropped = any(parse_line(rest) is not None for rest in lines[i:])
                return (cls(rules) if rules else None), dropped
            rule = parse_line(line)
            if rule is not None:
                rules.append(rule)
        return (cls(rules) if rules else None), False

    def decide(self, rel: bytes, name: bytes, is_dir: bool) -> bool | None:
        """True: ignored, False: re-included, None: no rule matches."""
        hit: list[int] = []
        names, paths = self.names, self.paths
        if names.match is not None:
            found = names.match(name)
            if found:
                hit += [names.rule_of[i] for i in found]
        if paths.match is not None:
            found = paths.match(rel)
            if found:
                hit += [paths.rule_of[i] for i in found]
        if not hit:
            return None
        rules = self.rules
        for k in sorted(hit, reverse=True):  # the last matching line decides
            rule = rules[k]
            if rule.dir_only and not is_dir:
                continue
            return not rule.negate
        return None
