"""pytest fixtures for tests against the sandbox (registered as the `cdc_sandbox` plugin entry point).

By default the fixtures attach to the sandbox of the current project (what `make up` started), bringing it up if
it is not running. `SANDBOX_STATE_DIR` and the port variables point them at another one.
"""

from __future__ import annotations

import uuid

import pytest

from sandbox import tickit
from sandbox.backends import native
from sandbox.config import Settings
from sandbox.connectors import ConnectClient
from sandbox.mutations import Mutator
from sandbox.registry import RegistryClient
from sandbox.services.localstack import s3_client


@pytest.fixture(scope="session")
def sandbox_settings() -> Settings:
    return Settings.load()


@pytest.fixture(scope="session")
def sandbox(sandbox_settings: Settings) -> Settings:
    """A running sandbox: attached to if it is up, started (without installing) if not."""
    statuses, connectors = native.status(sandbox_settings)
    healthy = all(s.state in ("running", "external") for s in statuses)
    if not healthy or any(state != "RUNNING" for _, state in connectors):
        native.up(sandbox_settings, lambda name, outcome: None, skip_install=True)
    return sandbox_settings


@pytest.fixture(scope="session")
def postgres(sandbox: Settings):
    return native.service(sandbox, "postgres")


@pytest.fixture(scope="session")
def mysql(sandbox: Settings):
    return native.service(sandbox, "mysql")


@pytest.fixture(scope="session")
def kafka_bootstrap(sandbox: Settings) -> str:
    return sandbox.endpoint("kafka").address


@pytest.fixture(scope="session")
def connect_client(sandbox: Settings) -> ConnectClient:
    return ConnectClient(sandbox.url("connect"))


@pytest.fixture(scope="session")
def registry(sandbox: Settings) -> RegistryClient:
    return RegistryClient(sandbox.registry_api_url)


@pytest.fixture(scope="session")
def s3(sandbox: Settings):
    return s3_client(sandbox.url("localstack"))


@pytest.fixture(scope="session")
def tickit_loaded(sandbox: Settings):
    """The source databases hold generated TICKIT (seed 0, original size); returns what the load did."""
    return tickit.load(sandbox, tickit.GeneratedRows(seed=0, scale=1.0))


@pytest.fixture
def mutator(sandbox: Settings, tickit_loaded) -> Mutator:
    return Mutator(sandbox)


@pytest.fixture(scope="session")
def pipeline(sandbox: Settings, tmp_path_factory):
    """The Hudi job on a lake of its own (fresh checkpoints) in this test session, run in-process."""
    from sandbox.pipeline import Pipeline

    pipe = Pipeline.start(sandbox, lake=f"s3a://{sandbox.topology.lake_bucket}/test-{uuid.uuid4().hex[:8]}")
    yield pipe
    pipe.stop()


@pytest.fixture(scope="session")
def lake_bucket(sandbox: Settings) -> str:
    return sandbox.topology.lake_bucket
