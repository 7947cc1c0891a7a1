"""Kill anything, lose nothing: while the job runs continuously, each component is killed with SIGKILL in turn
(Postgres, MariaDB, Kafka, Kafka Connect, Apicurio), changes go on where a database is still up, and `sandbox up`
restarts what died; then `sandbox down` while the job writes a batch, and every service killed at once (a power
cut, LocalStack included), each checked by the lake's listing too. After each fault the oracle checks silver
against the source (nothing lost, no key twice), and at the end time travel and incremental reads at every commit
it recorded. Connect's crash makes Debezium re-send what it had delivered since its last offset flush: the test
finds those real duplicates in Kafka and the oracle proves the job idempotent against them. The job's own crash:
test_job_modes.py. The recovery of each fault is in docs/guides/faults.md; the test prints its
timings."""

from __future__ import annotations

import random
import time
from collections import Counter

import pytest

from cdc_sandbox.spark_jobs.lake_layout import split_uri
from cdc_sandbox.sources.changes import ChangeReader, end_offsets
from cdc_sandbox.sources.positions import event_position
from cdc_sandbox.stack import backends
from cdc_sandbox.stack.services import bucket_snapshot
from cdc_sandbox.stack.services.localstack import LocalStack
from cdc_sandbox.wait import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.faults, pytest.mark.restarts_services]

ENGINE_OF = {"category": "postgres", "date": "mysql"}
TABLES = list(ENGINE_OF)
FAULTS = ["postgres", "mysql", "kafka", "apicurio", "connect"]
RESEND_ATTEMPTS = 3  # a Connect crash re-sends unless its offset flush (every 60 s) fell between delivery and kill


def test_each_component_killed_while_the_job_runs_loses_nothing(sandbox, pipeline_factory, oracle_factory, mutator,
                                                               registry, s3, capsys):
    pipeline = pipeline_factory(only=TABLES)
    topics = [pipeline.config.spec(table).topic for table in TABLES]
    floor = end_offsets(sandbox.endpoint("kafka").address, topics)  # every event of this test lies past it
    oracle = oracle_factory(pipeline)
    oracle.track(TABLES)
    pipeline.start_continuous()
    rng = random.Random(83)
    recoveries = []
    for component in FAULTS:
        if component == "connect":
            recoveries.append(connect_crash_resends(sandbox, pipeline, oracle, mutator, registry, rng, floor))
            continue
        change(mutator, rng, TABLES)
        killed_at = kill(sandbox, component)
        change(mutator, rng, [t for t in TABLES if ENGINE_OF[t] != component])  # the engine still up goes on
        recoveries.append(recover(sandbox, pipeline, oracle, component, killed_at))
    scratch = f"{pipeline.config.lake}-scratch"
    change(mutator, rng, TABLES)
    put_object(s3, f"{scratch}/saved-then-deleted")
    recoveries.append(down_mid_batch_and_up(sandbox, pipeline, oracle, s3))
    delete_object(s3, f"{scratch}/saved-then-deleted")  # in the snapshot, deleted since: must stay deleted
    put_object(s3, f"{scratch}/written-since")
    change(mutator, rng, TABLES)
    recoveries.append(power_cut_and_up(sandbox, pipeline, oracle, s3))
    oracle.verify_history()  # time travel to commits written between the two restarts: they came from the journal
    with capsys.disabled():
        print("\nfault          back up after   silver right after   job restarted   connectors before `up`")
        for component, up_after, right_after, job_restarted, connectors in recoveries:
            print(f"{component:<14} {up_after:>10.1f} s {right_after:>15.1f} s   {job_restarted:<15} {connectors}")


def connect_crash_resends(sandbox, pipeline, oracle, mutator, registry, rng, floor: dict) -> tuple:
    """Changes delivered, then Connect killed before its offsets are flushed: the restarted connectors deliver
    them again. Asserts that Kafka holds events of this test twice and that silver is still exactly the source."""
    for _ in range(RESEND_ATTEMPTS):
        change(mutator, rng, TABLES)
        oracle.wait_delivered()
        before = resent_events(sandbox, pipeline, registry, floor)  # e.g. the database crashes' re-sends
        # Changes made after the restart reach Kafka behind whatever the connectors re-send, so the round that
        # waits for them in silver has also seen the re-sends, and the count below cannot run ahead of them.
        recovery = recover(sandbox, pipeline, oracle, "connect", kill(sandbox, "connect"),
                           after_up=lambda: change(mutator, rng, TABLES))
        if resent_events(sandbox, pipeline, registry, floor) > before:
            return recovery
    pytest.fail(f"a Connect crash right after delivery re-sent nothing in {RESEND_ATTEMPTS} attempts: the idempotence "
                "check never met a real duplicate")


def resent_events(sandbox, pipeline, registry, floor: dict) -> int:
    """Events of the tables' topics past `floor` that repeat an earlier one's key, operation and source position."""
    repeats = 0
    for table in TABLES:
        spec = pipeline.config.spec(table)
        with ChangeReader(sandbox.endpoint("kafka").address, spec.topic, registry,
                          from_offsets=floor.get(spec.topic)) as reader:
            events = [e for e in reader.read_to_end(60) if e.value is not None]
        seen = Counter((event_position(spec.position, e.value), e.value.get("__op"), repr(e.key)) for e in events)
        repeats += sum(count - 1 for count in seen.values())
    return repeats


def change(mutator, rng: random.Random, tables: list[str]) -> None:
    """Inserts, updates and deletes in these tables, and an update in each."""
    mutator.random_batch(3 * len(tables), seed=rng.randrange(1 << 30), tables=tables)
    for table in tables:
        mutator.touch(table, rng)


def kill(settings, component: str) -> float:
    backends.of(settings).kill(settings, [component])
    return time.monotonic()


def quiet(name: str, outcome: str) -> None:
    pass


def down_mid_batch_and_up(settings, pipeline, oracle, s3) -> tuple:
    """`sandbox down` (every service SIGTERM'd, LocalStack saving the lake) once the job has a batch running, and
    `up`. The lake holds what `down` saved and what the job wrote or deleted while it was saved, nothing else."""
    oracle.wait_delivered()  # the changes are in Kafka: the job's next batch writes them
    wait_until(lambda: pipeline.query.status["message"] == "Processing new data", 60, "the job to start a batch")
    backends.of(settings).down(settings, quiet)
    stopped_at = time.monotonic()
    pipeline.stop_continuous()  # its batch fails without S3; stopped, it cannot write before the listing is taken
    job_stopped_in = time.monotonic() - stopped_at
    backends.of(settings).up(settings, quiet, skip_install=True)
    up_in = time.monotonic() - stopped_at - job_stopped_in
    assert bucket_snapshot.listing(s3) == saved_by_down(LocalStack(settings)), \
        "every object `down` saved comes back with its key, size and ETag, and nothing else"
    return recover(settings, pipeline, oracle, "sandbox down", stopped_at,
                   f"stopped in {job_stopped_in:.1f} s, up in {up_in:.1f} s")


def saved_by_down(localstack) -> dict:
    """The listing `down` saved, with what the job still wrote or deleted while the snapshot was taken (the
    journal kept after the save)."""
    _, saved = bucket_snapshot.read_manifest(localstack.snapshot_dir)
    expected = {(o.bucket, o.key): (o.size, o.etag) for o in saved}
    for change in bucket_snapshot.journal_changes(localstack.journal_dir):
        if change["op"] == "put":
            expected[change["bucket"], change["key"]] = (change["size"], change["etag"])
        elif change["op"] == "delete":
            expected.pop((change["bucket"], change["key"]), None)
    return expected


def power_cut_and_up(settings, pipeline, oracle, s3) -> tuple:
    """Every service SIGKILLed at once, as when the machine loses power; `up` brings the lake back as of
    LocalStack's last acknowledged write (the last save with the journal on top). The job is stopped first so that
    the listing taken before the cut is final (the job's own crash: test_job_modes.py)."""
    pipeline.stop_continuous()
    before = bucket_snapshot.listing(s3)
    backend = backends.of(settings)
    backend.kill(settings, [name for name, instance in backend.instances(settings).items() if instance])
    cut_at = time.monotonic()
    backends.of(settings).up(settings, quiet, skip_install=True)
    assert bucket_snapshot.listing(s3) == before, "the lake as of LocalStack's last acknowledged write"
    return recover(settings, pipeline, oracle, "power cut", cut_at)


def put_object(s3, uri: str) -> None:
    bucket, key = split_uri(uri)
    s3.put_object(Bucket=bucket, Key=key, Body=b"scratch")


def delete_object(s3, uri: str) -> None:
    bucket, key = split_uri(uri)
    s3.delete_object(Bucket=bucket, Key=key)


def recover(settings, pipeline, oracle, component: str, killed_at: float, detail: str = "",
            after_up=lambda: None) -> tuple:
    """`sandbox up` restarts what died; a job that failed meanwhile is started again from its checkpoint."""
    _, connectors = backends.of(settings).status(settings)
    backends.of(settings).up(settings, quiet, skip_install=True)
    up_after = time.monotonic() - killed_at
    after_up()
    restarted = "stopped" if pipeline.query is None else "failed" if pipeline.query.exception() is not None else "no"
    if restarted != "no":
        pipeline.stop_continuous()
        pipeline.start_continuous()
    oracle.round(f"after {component}")
    connectors_before = " ".join(state for _, state in connectors)
    return component, up_after, time.monotonic() - killed_at, restarted, f"{connectors_before}  {detail}".rstrip()
