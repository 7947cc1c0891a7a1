"""Backends run the same topology: `native` (server processes from packages) or `compose` (Docker).

Both modules implement `Backend`; `of(settings)` picks the one that runs a sandbox. Whatever the CLI, the pytest
plugin, the benches and the end-to-end tests do to the running services goes through it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from cdc_sandbox.config import Settings
    from cdc_sandbox.stack.services.base import ServiceStatus

Report = Callable[[str, str], None]


class Backend(Protocol):
    def up(self, settings: Settings, report: Report, skip_install: bool = False) -> None:
        """Start what is not running and register the connectors; the lake comes back as `down` saved it."""

    def down(self, settings: Settings, report: Report) -> None:
        """Stop every service gracefully, saving the lake."""

    def restart(self, settings: Settings, services: Sequence[str], report: Report) -> None:
        """Stop these services gracefully and start them again (the connectors registered as by `up`)."""

    def reset(self, settings: Settings, report: Report) -> None:
        """Stop every service and drop what the backend keeps outside the state directory."""

    def status(self, settings: Settings) -> tuple[list[ServiceStatus], list[tuple[str, str]]]:
        """Each service's status row, and each connector's state."""

    def logs(self, settings: Settings, service_name: str, lines: int, follow: bool) -> int:
        """Print the end of a service's log; returns the exit code."""

    def instances(self, settings: Settings) -> dict[str, str | None]:
        """Per service, what identifies its running instance (None when it is not running): the value changes
        whenever the service is restarted."""

    def process_user(self, settings: Settings, service_name: str) -> str:
        """The account a running service's server process runs as."""

    def kill(self, settings: Settings, services: Sequence[str]) -> None:
        """SIGKILL these services at once, as a crash or a power cut does, and wait until they are gone."""


def of(settings: Settings) -> Backend:
    """The backend running this sandbox (what `sandbox up` recorded, or SANDBOX_BACKEND)."""
    from cdc_sandbox.stack.backends import compose, native

    return compose if settings.backend == "compose" else native
