"""A sandbox on a shared machine does not open its data to the network or to the machine's other accounts: every
process listens on loopback alone, MariaDB takes no password-less login, its socket and data are its owner's alone
and it does not run as root, Kafka Connect's file provider reads the sandbox's secrets directory and nothing else,
and the files holding secrets or row values are private."""

from __future__ import annotations

import os
import pwd
import stat
import subprocess

import pymysql
import pytest
import requests

from cdc_sandbox.stack import backends, listening, orphans
from cdc_sandbox.stack.services.localstack import LocalStack
from cdc_sandbox.stack.services.mariadb import MariaDB

pytestmark = [pytest.mark.e2e]

POSTGRES_CONNECTOR = "io.debezium.connector.postgresql.PostgresConnector"


def test_every_sandbox_process_listens_on_loopback_alone(sandbox, spark):
    """Every server the sandbox started (found by what they are, with their children) and the harness's Spark
    driver; `sandbox status` shows the addresses the system reports and flags none."""
    if sandbox.backend != "native":
        pytest.skip("compose publishes every port on 127.0.0.1 (tests/unit/test_compose.py checks the files)")
    driver = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    processes = {process.pid: service for process, service in orphans.servers_in(sandbox.state_dir)}
    heard = {pid: listening.listening_addresses(pid) for pid in [*processes, driver]}
    statuses, _ = backends.of(sandbox).status(sandbox)
    shown = {status.service for status in statuses}  # a Spark cluster another session runs is not (nor checked)
    assert {processes[pid] for pid, addresses in heard.items() if addresses and processes.get(pid) in shown} == \
        {"postgres", "mysql", "kafka", "connect", "apicurio", "localstack", "metastore"} | shown, heard
    assert {pid: listening.beyond_loopback(addresses) for pid, addresses in heard.items()
            if listening.beyond_loopback(addresses)} == {}
    for status in statuses:
        assert status.address == ", ".join(heard[status.pid]) and not status.beyond_loopback, status


def test_listening_addresses_beyond_loopback_are_named():
    assert listening.beyond_loopback(["127.0.0.1:4566", "127.0.0.2:1", "[::1]:9083", "0.0.0.0:4566", "[::]:9083",
                                      "192.0.2.7:8080"]) == ["0.0.0.0:4566", "[::]:9083", "192.0.2.7:8080"]


def test_mariadb_takes_no_root_login_over_tcp(sandbox):
    endpoint = sandbox.endpoint("mysql")
    for user in ("root", ""):
        with pytest.raises(pymysql.err.OperationalError):
            pymysql.connect(host=endpoint.host, port=endpoint.port, user=user, connect_timeout=3)


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to another OS account needs root")
def test_another_os_account_cannot_reach_mariadbs_socket_or_data(sandbox):
    if sandbox.backend != "native":
        pytest.skip("compose has no MariaDB socket or data directory on the host: the server listens only on "
                    "127.0.0.1 and keeps its data in a Docker volume")
    mariadb = MariaDB(sandbox)
    as_nobody = subprocess.run(["su", "nobody", "-s", "/bin/sh", "-c",
                                f"mariadb --socket={mariadb.socket} -uroot -e 'SELECT 1'; ls {mariadb.data_dir}"],
                               capture_output=True, text=True, timeout=30)
    assert as_nobody.returncode != 0
    assert "Can't connect" in as_nobody.stderr and "Permission denied" in as_nobody.stderr, as_nobody.stderr
    assert stat.S_IMODE(mariadb.socket.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(mariadb.data_dir.stat().st_mode) == 0o700


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to another OS account needs root")
def test_another_os_account_cannot_reach_the_lakes_files(sandbox, s3, lake_bucket):
    """LocalStack keeps the bytes of large objects in the sandbox's state directory, not in the machine-wide
    /tmp/localstack-s3-storage, where another account's sandbox would read or block them."""
    if sandbox.backend != "native":
        pytest.skip("compose keeps LocalStack's files inside its container")
    localstack = LocalStack(sandbox)
    storage = localstack.data_dir / "s3-storage"
    s3.put_object(Bucket=lake_bucket, Key="_locked-down/large", Body=b"x" * 600 * 1024)  # beyond LocalStack's memory
    try:
        assert (storage / lake_bucket).is_dir()
        as_nobody = subprocess.run(["su", "nobody", "-s", "/bin/sh", "-c", f"ls {storage}"], capture_output=True,
                                   text=True, timeout=30)
    finally:
        s3.delete_object(Bucket=lake_bucket, Key="_locked-down/large")
    assert as_nobody.returncode != 0 and "Permission denied" in as_nobody.stderr, as_nobody.stderr
    assert stat.S_IMODE(localstack.data_dir.stat().st_mode) == 0o700


def test_mariadb_does_not_run_as_root(sandbox):
    if sandbox.backend == "native" and os.geteuid() != 0:
        pytest.skip("only a native sandbox run as root has an account to drop to")
    user = backends.of(sandbox).process_user(sandbox, "mysql")
    assert user not in ("root", "0")
    if sandbox.backend == "native":
        mariadb = MariaDB(sandbox)
        assert mariadb.run_as == user == "mysql", "the distribution's package makes the account"
        assert mariadb.data_dir.stat().st_uid == pwd.getpwnam("mysql").pw_uid


def resolved_tasks_max(sandbox, reference: str) -> str:
    """What the worker's config providers make of `reference`: validation reports the value it could not use."""
    response = requests.put(f"{sandbox.url('connect')}/connector-plugins/{POSTGRES_CONNECTOR}/config/validate",
                            json={"connector.class": POSTGRES_CONNECTOR, "tasks.max": reference,
                                  "topic.prefix": "probe", "database.hostname": "probe"}, timeout=30)
    response.raise_for_status()
    field = next(c["value"] for c in response.json()["configs"] if c["value"]["name"] == "tasks.max")
    return " ".join(field["errors"])


def test_a_connector_can_read_the_secrets_directory_and_no_other_file(sandbox):
    secrets = sandbox.secrets_file
    assert "Invalid value debezium" in resolved_tasks_max(sandbox, f"${{file:{secrets}:postgres.debezium.user}}")
    refused = resolved_tasks_max(sandbox, "${file:/etc/os-release:ID}")
    assert "${file:/etc/os-release:ID}" in refused, refused


def test_secrets_and_the_change_journal_are_their_owners_alone(sandbox, mutator):
    mutator.touch("category")  # the journal exists
    for path in (sandbox.secrets_file, mutator.journal.path):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert stat.S_IMODE(sandbox.secrets_file.parent.stat().st_mode) == 0o700
