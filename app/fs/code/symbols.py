"""A syntax tree's symbols: per-language rules as data, one walk for all (parse worker only).

A symbol is a declaration a reader would look for (class, function, method, struct, ...):
`{name, kind, start_line, end_line, signature, children}`, lines 1-based and inclusive.
Its range starts at its first decorator, attribute or leading comment (those on the lines
right above it, no blank line between) and ends at its last line: the range an edit of it
needs. `signature` is the line its name is on, stripped and cut. Children are the symbols
declared directly in its body, down to `depth` levels in all. The walk looks through
wrappers (`export`, `template<...>`, `@decorator`), preprocessor blocks and namespaces'
braces, never deeper than `MAX_NEST` nodes of them, so no tree can make it recurse far.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.fs.code import languages as L

MAX_SIGNATURE = 120
SIGNATURE_CUT = "…"
MAX_NEST = 48  # wrapper and transparent nodes looked through, at most, below one level
MAX_DEPTH = 6  # Markdown headings nest six deep; one result class per level (outline.py)
MAX_SYMBOLS = 20_000  # per file: a generated file of a million one-line functions stops here
CLASSLIKE = frozenset({"class", "struct", "interface", "trait", "impl", "enum", "record"})
COMMENTS = frozenset({"comment", "line_comment", "block_comment", "doc_comment"})

Node = Any  # tree_sitter.Node; typed loosely: the grammars' node types are data here


@dataclass(frozen=True)
class Rules:
    symbols: dict[str, str]  # node type -> kind
    wrappers: frozenset[str] = frozenset()  # looked through; the range starts at the wrapper
    transparent: frozenset[str] = frozenset()  # looked through at the same level
    attached: frozenset[str] = COMMENTS  # siblings right above that belong to the symbol
    bodies: frozenset[str] = frozenset()  # child types that hold a symbol's children
    special: dict[str, str] = field(default_factory=dict)  # node type -> handler name


_C_LIKE_TRANSPARENT = frozenset({
    "preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef",
    "linkage_specification", "declaration_list",
})
_JS_SYMBOLS = {
    "function_declaration": "function", "generator_function_declaration": "function",
    "class_declaration": "class", "class": "class", "method_definition": "method",
}
_JS_SPECIAL = {"lexical_declaration": "js_variable", "variable_declaration": "js_variable"}
_TS_SYMBOLS = {
    **_JS_SYMBOLS, "function_signature": "function", "abstract_class_declaration": "class",
    "method_signature": "method", "abstract_method_signature": "method",
    "interface_declaration": "interface", "type_alias_declaration": "type",
    "enum_declaration": "enum", "internal_module": "module", "module": "module",
}
_JS_WRAPPERS = frozenset({"export_statement", "ambient_declaration", "expression_statement"})
_JS_ATTACHED = COMMENTS | {"decorator"}
_JS_BODIES = frozenset({"class_body", "interface_body", "statement_block", "object_type"})
_C_SYMBOLS = {
    "function_definition": "function", "struct_specifier": "struct", "union_specifier": "struct",
    "enum_specifier": "enum",
}
_C_SPECIAL = {"declaration": "c_prototype", "type_definition": "c_typedef",
              "field_declaration": "c_prototype"}

RULES: dict[str, Rules] = {
    L.PYTHON: Rules(
        symbols={"function_definition": "function", "class_definition": "class"},
        wrappers=frozenset({"decorated_definition"}), bodies=frozenset({"block"}),
    ),
    L.JAVASCRIPT: Rules(
        symbols=_JS_SYMBOLS, wrappers=_JS_WRAPPERS, attached=_JS_ATTACHED, bodies=_JS_BODIES,
        special=_JS_SPECIAL,
    ),
    L.TYPESCRIPT: Rules(
        symbols=_TS_SYMBOLS, wrappers=_JS_WRAPPERS, attached=_JS_ATTACHED, bodies=_JS_BODIES,
        special=_JS_SPECIAL,
    ),
    L.GO: Rules(
        symbols={"function_declaration": "function", "method_declaration": "method"},
        special={"type_declaration": "go_specs", "const_declaration": "go_specs"},
    ),
    L.RUST: Rules(
        symbols={
            "function_item": "function", "function_signature_item": "function",
            "struct_item": "struct", "enum_item": "enum", "union_item": "struct",
            "trait_item": "trait", "impl_item": "impl", "mod_item": "module",
            "type_item": "type", "const_item": "constant", "static_item": "constant",
            "macro_definition": "macro",
        },
        attached=COMMENTS | {"attribute_item"}, bodies=frozenset({"declaration_list"}),
    ),
    L.JAVA: Rules(
        symbols={
            "class_declaration": "class", "interface_declaration": "interface",
            "enum_declaration": "enum", "record_declaration": "record",
            "annotation_type_declaration": "interface", "method_declaration": "method",
            "constructor_declaration": "method", "compact_constructor_declaration": "method",
        },
        transparent=frozenset({"enum_body_declarations"}),
        bodies=frozenset({"class_body", "interface_body", "enum_body", "annotation_type_body"}),
    ),
    L.C: Rules(
        symbols=_C_SYMBOLS, transparent=_C_LIKE_TRANSPARENT, special=_C_SPECIAL,
        bodies=frozenset({"field_declaration_list", "enumerator_list"}),
    ),
    L.CPP: Rules(
        symbols={**_C_SYMBOLS, "class_specifier": "class", "namespace_definition": "namespace"},
        wrappers=frozenset({"template_declaration"}), transparent=_C_LIKE_TRANSPARENT,
        special=_C_SPECIAL, bodies=frozenset({"field_declaration_list", "declaration_list"}),
    ),
    L.CSHARP: Rules(
        symbols={
            "class_declaration": "class", "struct_declaration": "struct",
            "interface_declaration": "interface", "enum_declaration": "enum",
            "record_declaration": "record", "record_struct_declaration": "record",
            "namespace_declaration": "namespace",
            "file_scoped_namespace_declaration": "namespace",
            "method_declaration": "method", "constructor_declaration": "method",
            "destructor_declaration": "method", "operator_declaration": "method",
            "property_declaration": "property", "delegate_declaration": "type",
            "event_declaration": "property",
        },
        bodies=frozenset({"declaration_list"}),
    ),
    L.RUBY: Rules(
        symbols={"class": "class", "module": "module", "method": "function",
                 "singleton_method": "function", "singleton_class": "class"},
        bodies=frozenset({"body_statement"}),
    ),
    L.PHP: Rules(
        symbols={
            "function_definition": "function", "class_declaration": "class",
            "interface_declaration": "interface", "trait_declaration": "trait",
            "enum_declaration": "enum", "method_declaration": "method",
            "namespace_definition": "namespace",
        },
        bodies=frozenset({"declaration_list", "compound_statement", "enum_declaration_list"}),
    ),
    L.BASH: Rules(symbols={"function_definition": "function"},
                  bodies=frozenset({"compound_statement"})),
}
RULES[L.TSX] = RULES[L.TYPESCRIPT]


class Walk:
    """One file's symbols as dicts (`to_dicts`), made by the rules of its language."""

    def __init__(self, language: str, source: bytes, depth: int) -> None:
        self.rules = RULES[language]
        self.source = source
        self.depth = max(1, min(depth, MAX_DEPTH))
        self.count = 0
        self.truncated = False

    # -- the walk -------------------------------------------------------------------------

    def children_of(self, container: Node, level: int, parent_kind: str | None) -> list[dict]:
        """The symbols declared in `container` (a file or a body), at `level` (1: top)."""
        out: list[dict] = []
        stack: list[tuple[Node, int]] = [(c, 0) for c in reversed(container.named_children)]
        while stack:
            node, nest = stack.pop()
            if self.count >= MAX_SYMBOLS:
                self.truncated = True
                break
            made = self.symbols_of(node, node, level, parent_kind, nest)
            if made is not None:
                out.extend(made)
            elif node.type in self.rules.transparent and nest < MAX_NEST:
                stack.extend((c, nest + 1) for c in reversed(node.named_children))
        return out

    def symbols_of(
        self, node: Node, outer: Node, level: int, parent_kind: str | None, nest: int
    ) -> list[dict] | None:
        """The symbols `node` declares (its range from `outer`), or None when it declares
        none and is not looked through."""
        rules, t = self.rules, node.type
        if t in rules.symbols:
            kind = rules.symbols[t]
            if kind == "function" and parent_kind in CLASSLIKE:
                kind = "method"
            if t == "method_declaration" and parent_kind is None and rules is RULES[L.GO]:
                return [self.make(node, outer, "method", go_method_name(node), level)]
            return [self.make(node, outer, kind, self.name_of(node), level)]
        if t in rules.wrappers and nest < MAX_NEST:
            inner = node.child_by_field_name("declaration") or node.child_by_field_name(
                "definition")
            found: list[dict] = []
            for c in [inner] if inner is not None else node.named_children:
                got = self.symbols_of(c, outer, level, parent_kind, nest + 1)
                if got:
                    found.extend(got)
            return found or None
        handler = rules.special.get(t)
        if handler is not None:
            return getattr(self, handler)(node, outer, level, parent_kind) or None
        return None

    def make(self, node: Node, outer: Node, kind: str, name: str, level: int) -> dict:
        self.count += 1
        start = self.first_row(outer)
        name_node = node.child_by_field_name("name")
        sig_at = (name_node or node).start_byte
        sym: dict = {
            "name": name or "(anonymous)", "kind": kind, "start_line": start + 1,
            "end_line": max(start + 1, last_line(outer)), "signature": self.line(sig_at),
        }
        if level < self.depth:
            children: list[dict] = []
            for body in _bodies(node, self.rules.bodies):
                children.extend(self.children_of(body, level + 1, kind))
            if children:
                sym["children"] = children
        return sym

    def first_row(self, outer: Node) -> int:
        """The row of the first attached sibling right above `outer`, or `outer`'s own."""
        row = outer.start_point.row
        prev = outer.prev_named_sibling
        while prev is not None and prev.type in self.rules.attached:
            if end_line(prev) < row:  # a blank line between (end_line is 1-based)
                break
            if prev.start_point.row == 0 and prev.text.startswith(b"#!"):
                break  # a script's first line says how to run it
            before = prev.prev_named_sibling
            if before is not None and end_line(before) - 1 == prev.start_point.row:
                break  # a comment at the end of the line before, not above this symbol
            row = prev.start_point.row
            prev = before
        return row

    def line(self, at: int) -> str:
        """The line holding byte `at`, stripped and cut."""
        start = self.source.rfind(b"\n", 0, at) + 1
        end = self.source.find(b"\n", at)
        text = self.source[start : end if end >= 0 else len(self.source)]
        return cut(text[: 4 * MAX_SIGNATURE].decode("utf-8", "replace").strip())

    def name_of(self, node: Node) -> str:
        n = node.child_by_field_name("name")
        if n is None and node.type in ("function_definition", "field_declaration",
                                       "declaration"):
            n = c_declarator_name(node)
        if n is None and node.type == "impl_item":
            t, tr = node.child_by_field_name("type"), node.child_by_field_name("trait")
            if t is not None:
                return text(t) if tr is None else f"{text(tr)} for {text(t)}"
        return text(n) if n is not None else ""

    # -- special forms ---------------------------------------------------------------------

    def js_variable(self, node: Node, outer: Node, level: int, parent: str | None) -> list[dict]:
        """`const f = () => ...`, `let C = class {...}`, a top-level `const LIMIT = 3`."""
        out = []
        declarators = [c for c in node.named_children if c.type == "variable_declarator"]
        for d in declarators:
            value, name = d.child_by_field_name("value"), d.child_by_field_name("name")
            if name is None or name.type != "identifier":
                continue
            kind = None
            if value is not None and value.type in ("arrow_function", "function_expression",
                                                    "function", "generator_function"):
                kind = "function"
            elif value is not None and value.type == "class":
                kind = "class"
            elif level == 1 and text(name).isupper() and node.type == "lexical_declaration":
                kind = "constant"
            if kind is not None:
                one = len(declarators) == 1
                out.append(self.make(d if not one else node, outer if one else d, kind,
                                     text(name), level))
        return out

    def go_specs(self, node: Node, outer: Node, level: int, parent: str | None) -> list[dict]:
        specs = [c for c in node.named_children if c.type in ("type_spec", "type_alias",
                                                              "const_spec")]
        out = []
        for s in specs:
            t = s.child_by_field_name("type")
            kind = "constant" if s.type == "const_spec" else {
                "struct_type": "struct", "interface_type": "interface"}.get(
                t.type if t is not None else "", "type")
            out.append(self.make(s, outer if len(specs) == 1 else s, kind, self.name_of(s),
                                 level))
        return out

    def c_prototype(self, node: Node, outer: Node, level: int, parent: str | None
                    ) -> list[dict]:
        """A function declared but not defined (a header's prototype, a method in a class);
        a struct/class/enum defined inside a declaration (`struct S {...} s;`)."""
        decl = node.child_by_field_name("declarator")
        while decl is not None and decl.type in ("pointer_declarator", "reference_declarator"):
            decl = decl.child_by_field_name("declarator") or (
                decl.named_children[-1] if decl.named_children else None)
        if decl is not None and decl.type == "function_declarator":
            kind = "method" if parent in CLASSLIKE else "function"
            return [self.make(node, outer, kind, self.name_of(node), level)]
        t = node.child_by_field_name("type")
        if t is not None and t.type in self.rules.symbols and _has_body(t):
            return [self.make(t, outer, self.rules.symbols[t.type], self.name_of(t), level)]
        return []

    def c_typedef(self, node: Node, outer: Node, level: int, parent: str | None) -> list[dict]:
        t, d = node.child_by_field_name("type"), node.child_by_field_name("declarator")
        kind = "type"
        if t is not None and t.type in self.rules.symbols and _has_body(t):
            kind = self.rules.symbols[t.type]
        name = text(d) if d is not None and d.type == "type_identifier" else (
            text(c_declarator_name(node)) if c_declarator_name(node) is not None else "")
        sym = self.make(t if kind != "type" and t is not None else node, outer, kind, name,
                        level)
        return [sym]


def _bodies(node: Node, types: frozenset[str]) -> list[Node]:
    body = node.child_by_field_name("body")
    if body is not None:
        return [body]
    return [c for c in node.named_children if c.type in types]


def _has_body(node: Node) -> bool:
    return node.child_by_field_name("body") is not None


def c_declarator_name(node: Node) -> Node | None:
    """The name inside a C/C++ declarator chain (`int *(*f)(int)`, `A::b() const`)."""
    d = node.child_by_field_name("declarator")
    for _ in range(MAX_NEST):
        if d is None:
            return None
        if d.type in ("identifier", "field_identifier", "qualified_identifier",
                      "destructor_name", "operator_name", "type_identifier", "operator_cast"):
            return d
        inner = d.child_by_field_name("declarator")
        if inner is None:
            named = [c for c in d.named_children if c.type != "parameter_list"]
            inner = named[0] if named else None
        d = inner
    return None


def go_method_name(node: Node) -> str:
    """`T.M` for `func (r *T[K]) M()`: the receiver's type, then the method's name."""
    name = text(node.child_by_field_name("name"))
    recv = node.child_by_field_name("receiver")
    stack = list(recv.named_children) if recv is not None else []
    for _ in range(MAX_NEST):
        if not stack:
            break
        n = stack.pop(0)
        if n.type == "type_identifier":
            return f"{text(n)}.{name}"
        stack.extend(n.named_children)
    return name


def text(node: Node | None) -> str:
    if node is None:
        return ""
    return " ".join(node.text.decode("utf-8", "replace").split())[:MAX_SIGNATURE]


def last_line(node: Node) -> int:
    """A symbol's last line: its node's, less comments that close it (Python's grammar puts
    the comments after a body's last statement into the body, `ast` does not)."""
    for _ in range(MAX_NEST):
        kids = node.children
        if not kids:
            break
        last = kids[-1]
        if last.type in COMMENTS:
            before = [c for c in kids if c.type not in COMMENTS]
            if not before:
                break
            node = before[-1]
        elif last.child_count:  # a compound statement's end is its own last line's
            node = last
        else:
            break
    return end_line(node)


def end_line(node: Node) -> int:
    """1-based last line: a node that ends at a line's start ends on the line before."""
    row, col = node.end_point.row, node.end_point.column
    return max(node.start_point.row + 1, row + 1 if col > 0 else row)


def cut(s: str) -> str:
    return s if len(s) <= MAX_SIGNATURE else s[: MAX_SIGNATURE - 1] + SIGNATURE_CUT


# -- Markdown: headings by level, not by the grammar's sections -------------------------------

HEADINGS = frozenset({"atx_heading", "setext_heading"})


def markdown(root: Node, source: bytes, depth: int) -> list[dict]:
    """Each heading, nested under the last heading of a lower level; its range runs to the
    line before the next heading of its level or a lower one (or the end of the file)."""
    found: list[tuple[int, int, str]] = []  # (level, row, title)
    stack = [root]
    while stack and len(found) < MAX_SYMBOLS:
        n = stack.pop()
        if n.type in HEADINGS:
            found.append((_heading_level(n), n.start_point.row, _heading_title(n)))
            continue
        if n.type in ("document", "section"):
            stack.extend(reversed(n.named_children))
    last_line = end_line(root)
    flat: list[dict] = []
    for i, (lvl, row, title) in enumerate(found):
        end = last_line
        for lvl2, row2, _ in found[i + 1:]:
            if lvl2 <= lvl:
                end = row2
                break
        flat.append({"name": title, "kind": "heading", "start_line": row + 1,
                     "end_line": max(row + 1, end), "signature": cut("#" * lvl + " " + title),
                     "_level": lvl})
    return _nest(flat, max(1, min(depth, MAX_DEPTH)))


def _nest(flat: list[dict], depth: int) -> list[dict]:
    top: list[dict] = []
    path: list[dict] = []  # the open headings, outermost first
    for h in flat:
        while path and path[-1]["_level"] >= h["_level"]:
            path.pop()
        if len(path) < depth:
            (path[-1].setdefault("children", []) if path else top).append(h)
        path.append(h)
    for h in flat:
        h.pop("_level", None)
    return top


def _heading_level(n: Node) -> int:
    for c in n.children:
        if c.type.startswith("atx_h") and c.type.endswith("_marker"):
            return int(c.type[5])
        if c.type == "setext_h1_underline":
            return 1
        if c.type == "setext_h2_underline":
            return 2
    return 1


def _heading_title(n: Node) -> str:
    content = n.child_by_field_name("heading_content")
    return text(content).strip("# ") if content is not None else ""


def outline_tree(language: str, root: Node, source: bytes, depth: int) -> tuple[list[dict], bool]:
    """(the symbols of a parsed file, whether MAX_SYMBOLS cut them)."""
    if language == L.MARKDOWN:
        syms = markdown(root, source, depth)
        return syms, False
    w = Walk(language, source, depth)
    return w.children_of(root, 1, None), w.truncated
