"""Which language a file is in, by its name, and where that language's grammar comes from.

Nothing here imports a grammar: `GRAMMARS` names the package and function that give it, and
only the parse worker (`app.fs.code.worker`) imports them, on the first file of a language,
so the server's start-up does not grow with the languages it knows.
"""

from __future__ import annotations

PYTHON, JAVASCRIPT, TYPESCRIPT, TSX = "python", "javascript", "typescript", "tsx"
GO, RUST, JAVA, C, CPP, CSHARP = "go", "rust", "java", "c", "cpp", "csharp"
RUBY, PHP, BASH, MARKDOWN = "ruby", "php", "bash", "markdown"

EXTENSIONS: dict[str, str] = {
    ".py": PYTHON, ".pyi": PYTHON, ".pyw": PYTHON,
    ".js": JAVASCRIPT, ".mjs": JAVASCRIPT, ".cjs": JAVASCRIPT, ".jsx": JAVASCRIPT,
    ".ts": TYPESCRIPT, ".mts": TYPESCRIPT, ".cts": TYPESCRIPT, ".tsx": TSX,
    ".go": GO, ".rs": RUST, ".java": JAVA, ".c": C, ".h": C,
    ".cc": CPP, ".cpp": CPP, ".cxx": CPP, ".c++": CPP, ".hh": CPP, ".hpp": CPP, ".hxx": CPP,
    ".cs": CSHARP, ".rb": RUBY, ".rake": RUBY, ".gemspec": RUBY, ".php": PHP,
    ".sh": BASH, ".bash": BASH, ".zsh": BASH, ".ksh": BASH,
    ".md": MARKDOWN, ".markdown": MARKDOWN,
}
NAMES: dict[str, str] = {"Rakefile": RUBY, "Gemfile": RUBY, ".bashrc": BASH, ".profile": BASH}

# language -> (module, function returning the grammar's pointer)
GRAMMARS: dict[str, tuple[str, str]] = {
    PYTHON: ("tree_sitter_python", "language"),
    JAVASCRIPT: ("tree_sitter_javascript", "language"),
    TYPESCRIPT: ("tree_sitter_typescript", "language_typescript"),
    TSX: ("tree_sitter_typescript", "language_tsx"),
    GO: ("tree_sitter_go", "language"),
    RUST: ("tree_sitter_rust", "language"),
    JAVA: ("tree_sitter_java", "language"),
    C: ("tree_sitter_c", "language"),
    CPP: ("tree_sitter_cpp", "language"),
    CSHARP: ("tree_sitter_c_sharp", "language"),
    RUBY: ("tree_sitter_ruby", "language"),
    PHP: ("tree_sitter_php", "language_php"),
    BASH: ("tree_sitter_bash", "language"),
    MARKDOWN: ("tree_sitter_markdown", "language"),
}


def language_of(name: str) -> str | None:
    """The language of a file called `name` (its last path part), or None."""
    base = name.rsplit("/", 1)[-1]
    if base in NAMES:
        return NAMES[base]
    dot = base.rfind(".")
    return EXTENSIONS.get(base[dot:].lower()) if dot > 0 else None
