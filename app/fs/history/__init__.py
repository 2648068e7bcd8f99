"""Read-only git history of a root (docs/tools.md#history-git); see `store` for the threat model."""
