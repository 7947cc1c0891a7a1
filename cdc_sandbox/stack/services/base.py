"""What every native service shares: pid file, start with a readiness check, stop, status."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cdc_sandbox.config import Endpoint, Settings
from cdc_sandbox.stack import jvm, listening, process
from cdc_sandbox.stack.class_sharing import ServiceArchive, recording_path


@dataclass
class ServiceStatus:
    service: str
    state: str  # running | stopped | external | unreachable
    address: str  # natively: where the process listens, as the system reports it
    pid: int | None
    version: str
    note: str = ""
    beyond_loopback: tuple[str, ...] = ()  # addresses it listens on that other machines can reach


class NativeService:
    """Subclasses set `name` and implement `prepare`, `command` and `is_ready`; `post_start` is optional."""

    name: str = ""
    start_timeout: float = 180
    run_as: str | None = None  # OS user to run the server as (Postgres refuses root)

    def __init__(self, settings: Settings):
        self.settings = settings

    # --- what subclasses provide -------------------------------------------------------------------------
    def prepare(self) -> None:
        """Create the data directory and configuration, once (idempotent)."""

    def command(self) -> list[str]:
        raise NotImplementedError

    def environment(self) -> dict[str, str]:
        return {}

    def is_ready(self) -> bool:
        raise NotImplementedError

    def post_start(self) -> None:
        """Idempotent set-up that needs the running server (databases, users, topics, buckets)."""

    def version(self) -> str:
        return "?"

    # --- shared behaviour --------------------------------------------------------------------------------
    @property
    def endpoint(self) -> Endpoint:
        return self.settings.endpoint(self.name)

    @property
    def url(self) -> str:
        """Base URL of a service that speaks HTTP."""
        return self.settings.url(self.name)

    @property
    def ports(self) -> list[int]:
        return [self.endpoint.port]

    @property
    def external(self) -> bool:
        return self.endpoint.external

    @property
    def pid_file(self) -> Path:
        return self.settings.pid_file(self.name)

    @property
    def log_file(self) -> Path:
        return self.settings.log_file(self.name)

    @property
    def data_dir(self) -> Path:
        return self.settings.data_dir(self.name)

    @property
    def conf_dir(self) -> Path:
        return self.settings.conf_dir(self.name)

    def pid(self) -> int | None:
        return process.running_pid(self.pid_file)

    def start(self) -> str:
        """Start the service unless it is already up; returns what was done, for the progress display."""
        if self.external:
            self._require_ready_external()
            self.post_start()
            return "external"
        if self.pid() is not None and self.is_ready():
            self.post_start()
            return "already running"
        self.prepare()
        process.start_detached(
            self.name, self.command(), self.is_ready, self.log_file, self.pid_file,
            env=self.environment(), cwd=self.settings.state_dir, timeout=self.start_timeout, user=self.run_as,
        )
        self.post_start()
        return "started"

    def stop(self) -> bool:
        if self.external:
            return False
        return process.stop_process(self.pid_file)

    def shut_down(self) -> str:
        """Stop the service; returns what was done, for the progress display."""
        return "stopped" if self.stop() else "was not running"

    def status(self) -> ServiceStatus:
        address = self.endpoint.address
        if self.external:
            ready = self.is_ready()
            return ServiceStatus(self.name, "external" if ready else "unreachable", address, None,
                                 self.version() if ready else "-")
        pid = self.pid()
        if pid is None:
            return ServiceStatus(self.name, "stopped", address, None, "-")
        ready = process.quietly(self.is_ready)
        actual = listening.listening_addresses(pid)
        exposed = listening.beyond_loopback(actual)
        return ServiceStatus(self.name, "running" if ready else "starting", ", ".join(actual) or address, pid,
                             self.version() if ready else "-", beyond_loopback=tuple(exposed))

    def _require_ready_external(self) -> None:
        from cdc_sandbox.errors import SandboxError

        if not process.quietly(self.is_ready):
            raise SandboxError(
                f"external {self.name} at {self.endpoint.address} does not answer",
                f"check SANDBOX_{self.name.upper()}_HOST/_PORT and credentials, or unset the host to run it natively",
            )


class JvmService(NativeService):
    """A service on the JVM: `java()` starts it from its class archive (or records one), and a stop keeps a recording
    (`class_sharing`). Subclasses provide `classpath`, the value a `-cp` would have."""

    def classpath(self) -> str:
        raise NotImplementedError

    def class_archive(self) -> ServiceArchive:
        return ServiceArchive(self.settings, self.name, self.classpath())

    def launch(self) -> list[str]:
        """Where the JVM finds the service's classes; its main class, if any, comes after."""
        return ["-cp", self.classpath()]

    def java(self, *options: str) -> list[str]:
        """`java` with the service's class archive, these options and `launch`."""
        return [jvm.java_binary(), *self.class_archive().java_options(), *options, *self.launch()]

    def stop(self) -> bool:
        stopped = super().stop()
        if stopped and recording_path(self.settings, self.name).exists():  # else the jars need not even be there
            self.class_archive().keep_recording()
        return stopped
