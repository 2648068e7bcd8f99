"""What the tools do on disk, always through `SecureRoot` handles."""
