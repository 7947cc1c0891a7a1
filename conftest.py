"""`SANDBOX_BROKEN_JOB=<variant>` runs the whole test session against a deliberately broken job (see
tests/broken_variants.py): the suites must then fail."""

import os

_patch = None


def pytest_configure(config):
    global _patch
    name = os.environ.get("SANDBOX_BROKEN_JOB")
    if name:
        from tests.broken_variants import break_job

        _patch = break_job(name)


def pytest_unconfigure(config):
    if _patch is not None:
        _patch.undo()
