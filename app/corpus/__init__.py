"""Every readable root as one collection: `search` and `fetch` for ChatGPT deep research.

The layer between the registry and the tools: it takes the registry's `Snapshot` (which
roots, their rules, the limits, where the index lives) and orchestrates the work across
roots; the work on one root stays in `app.fs` (`documents`, `ranked`, `fts`).
"""
