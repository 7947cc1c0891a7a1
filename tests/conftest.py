"""Project tests get the `cdc_sandbox` plugin through its entry point (see pyproject.toml)."""
