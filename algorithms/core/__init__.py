"""The Encoder interface and the registry that finds every encoder by name."""
