"""Backends run the same topology: `native` (server processes from packages) or `compose` (Docker)."""
