"""Project tests get the `cdc_sandbox` plugin through its entry point (see pyproject.toml).

A test marked `restarts_services` stops or restarts a service of the shared stack: it runs after every other test of
its session, and under `make test` once the example projects' run beside it has ended (tests/full_suite.py)."""

from __future__ import annotations

import fcntl
import os

import pytest

from tests.full_suite import LANE_LOCK_ENV  # set while the projects' run goes on

RESTARTS_SERVICES = "restarts_services"


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: item.get_closest_marker(RESTARTS_SERVICES) is not None)  # stable: order kept


@pytest.fixture(autouse=True)
def _alone_on_the_stack(request):
    path = os.environ.get(LANE_LOCK_ENV)
    if path is None or request.node.get_closest_marker(RESTARTS_SERVICES) is None:
        yield
        return
    with open(path) as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)  # waits until the projects' run has ended
        yield
