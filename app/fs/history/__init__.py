"""Read-only git history of a root (SPEC 4.7); see `store` for the threat model."""
