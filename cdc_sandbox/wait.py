"""Waiting for a state, never for a fixed time: poll a check until it holds or a deadline passes."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from cdc_sandbox.errors import SandboxError

T = TypeVar("T")


def wait_until(check: Callable[[], T | None], timeout: float, waiting_for: str, hint: str = "",
               interval: float = 0.2) -> T:
    """Call `check` until it returns something truthy and return that; on timeout, say what was awaited."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise SandboxError(f"timed out after {timeout:.0f} s waiting for {waiting_for}", hint)
        time.sleep(interval)
