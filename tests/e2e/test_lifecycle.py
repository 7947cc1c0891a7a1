"""`up` twice reuses what runs; `down` stops everything and keeps the data; `up` again resumes capture."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sandbox.backends import native
from sandbox.changes import ChangeReader

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def sandbox_cli(*args: str) -> str:
    result = subprocess.run([sys.executable, "-m", "sandbox", *args], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    return " ".join(result.stdout.split())


def pids(settings) -> dict[str, int | None]:
    return {svc.name: svc.pid() for svc in native.all_services(settings)}


def test_up_twice_reuses_installs_and_running_services(sandbox):
    before = pids(sandbox)
    output = sandbox_cli("up")
    for service in before:
        assert f"{service} already running" in output
    assert "jvm artifacts present" in output and "localstack present" in output
    assert pids(sandbox) == before


def test_down_keeps_data_and_up_resumes_capture(sandbox, postgres, kafka_bootstrap, registry, s3, lake_bucket):
    s3.put_object(Bucket=lake_bucket, Key="lifecycle/kept.txt", Body=b"lake object")
    with postgres.connect() as conn, conn.cursor() as cur:
        cur.execute("INSERT INTO ems.cdc_probe (id, name) VALUES (-1, 'kept across restart') "
                    "ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name")
    sandbox_cli("down")
    assert all(pid is None for pid in pids(sandbox).values())

    sandbox_cli("up", "--skip-install")
    assert s3.get_object(Bucket=lake_bucket, Key="lifecycle/kept.txt")["Body"].read() == b"lake object"
    s3.delete_object(Bucket=lake_bucket, Key="lifecycle/kept.txt")
    with postgres.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT name FROM ems.cdc_probe WHERE id = -1")
        assert cur.fetchone() == ("kept across restart",)
        cur.execute("UPDATE ems.cdc_probe SET name = 'changed after restart' WHERE id = -1")
    topic = sandbox.topology.topic("ems", "cdc_probe")
    with ChangeReader(kafka_bootstrap, topic, registry) as reader:
        event = reader.wait_for(lambda e: e.key == {"id": -1} and e.value and e.value["name"] == "changed after restart",
                                120, "the update made after the restart")
    assert event.value["__op"] == "u"
