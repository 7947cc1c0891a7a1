"""The Hudi job against the running stack: time travel, deletes, ordering, incremental reads, poison messages
(silver equal to the sources in full: test_oracle_suites.py)."""

from __future__ import annotations

import datetime as dt
import io
import json
import random
import uuid
from types import SimpleNamespace

import fastavro
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from cdc_sandbox.sources.changes import ChangeReader
from cdc_sandbox.spark_jobs.decode import KAFKA_COLUMNS, decode
from cdc_sandbox.spark_jobs.queries import incremental
from cdc_sandbox.stack import databases

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

EVENT_TIMEOUT = 180


def silver_row(pipeline, frame, table: str, key: dict) -> dict | None:
    condition = " AND ".join(f"`{k}` = {v!r}" for k, v in key.items())
    rows = frame.filter(condition).collect()
    return rows[0].asDict() if rows else None


def test_update_shows_new_value_and_time_travel_the_old(sandbox, pipeline, mutator, settle):
    settle(["category"])
    pipeline.run_once()
    before = pipeline.timeline("category")[-1]
    row = mutator.sample_row("category", random.Random(11))
    new_desc = f"changed {uuid.uuid4().hex[:8]}"
    change = mutator.update("category", {"catid": row["catid"]}, {"catdesc": new_desc})
    settle(["category"])
    pipeline.run_once()
    commits = pipeline.timeline("category")
    latest = commits[-1]
    assert latest.max_source_position >= change.position["lsn_from"]
    assert silver_row(pipeline, pipeline.snapshot("category"), "category", {"catid": row["catid"]})["catdesc"] == new_desc
    old = silver_row(pipeline, pipeline.time_travel("category", before.instant), "category", {"catid": row["catid"]})
    assert old["catdesc"] == row["catdesc"]


@pytest.mark.parametrize("table", ["venue", "sale"])
def test_delete_is_soft_and_time_travel_before_it_keeps_the_row(sandbox, pipeline, mutator, settle, kafka_bootstrap,
                                                                   registry, table):
    placement = mutator.placement(table)
    (pk,) = placement.table.primary_key
    template = mutator.sample_row(table, random.Random(5))
    new_id = mutator.next_key(table) + 500
    captured = sandbox.topology.table(table)
    with ChangeReader(kafka_bootstrap, sandbox.topology.topic(captured.namespace, table), registry,
                      from_end=True) as reader:
        inserted = mutator.insert(table, {c: template[c] for c in placement.table.column_names} | {pk: new_id})
        reader.wait_for_change(inserted, EVENT_TIMEOUT)
        pipeline.run_once()
        alive_commit = pipeline.timeline(table)[-1]
        deleted = mutator.delete(table, {pk: new_id})
        reader.wait_for_change(deleted, EVENT_TIMEOUT)
    pipeline.run_once()
    gone = silver_row(pipeline, pipeline.snapshot(table), table, {pk: new_id})
    assert gone["__op"] == "d" and gone["__deleted"] == "true"
    if table == "sale":  # the catalog table reads the same silver
        pipeline.spark.catalog.refreshTable("tickit_cdc_hudi.sale")
        (row,) = pipeline.spark.sql(f"SELECT __deleted FROM tickit_cdc_hudi.sale WHERE salesid = {new_id}").collect()
        assert row["__deleted"] == "true"
    alive = silver_row(pipeline, pipeline.time_travel(table, alive_commit.instant), table, {pk: new_id})
    assert alive["__deleted"] == "false" and alive["__op"] == "c"


@pytest.mark.parametrize("table", ["category", "date"])
def test_two_updates_in_one_millisecond_resolve_to_the_later(sandbox, pipeline, mutator, kafka_bootstrap, registry,
                                                             table):
    placement = mutator.placement(table)
    (pk,) = placement.table.primary_key
    row = mutator.sample_row(table, random.Random(21))
    column = next(c for c in mutator.changeable_columns(table) if c.type == "str")
    first, second = "first"[: column.max_length], "second"[: column.max_length]
    captured = sandbox.topology.table(table)
    with ChangeReader(kafka_bootstrap, sandbox.topology.topic(captured.namespace, table), registry,
                      from_end=True) as reader:
        with databases.table_connection(sandbox, placement) as conn:
            with conn.cursor() as cur:  # one transaction: both changes carry the same commit timestamp
                for value in (first, second):
                    cur.execute(f"UPDATE {placement.name} SET {column.name} = %s WHERE {pk} = %s", (value, row[pk]))
            conn.commit()
        events = [reader.wait_for(lambda e, v=v: e.key == {pk: row[pk]} and e.value[column.name].rstrip() == v,
                                  EVENT_TIMEOUT, f"update to {v!r}") for v in (first, second)]
    assert events[0].value["__source_ts_ms"] == events[1].value["__source_ts_ms"]
    pipeline.run_once()
    assert silver_row(pipeline, pipeline.snapshot(table), table, {pk: row[pk]})[column.name].rstrip() == second


def test_incremental_read_returns_exactly_the_changes_between_commits(sandbox, pipeline, mutator, settle):
    settle(["event"])
    pipeline.run_once()
    start = pipeline.timeline("event")[-1]
    keys = set()
    for seed in (31, 32):
        row = mutator.sample_row("event", random.Random(seed))
        mutator.update("event", {"eventid": row["eventid"]}, {"eventname": f"renamed {uuid.uuid4().hex[:6]}"})
        keys.add(row["eventid"])
    settle_change = settle(["event"])[0]
    keys.add(settle_change.key["eventid"])
    pipeline.run_once()
    end = pipeline.timeline("event")[-1]
    rows = incremental(pipeline.spark, pipeline.path("event"), start.completed, end.completed).select("eventid").collect()
    assert {r["eventid"] for r in rows} == keys


def first_message(bootstrap: str, topic: str) -> bytes:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"test-{uuid.uuid4()}", "log_level": 0})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        message = consumer.poll(30)
        assert message is not None and not message.error(), f"no message read from {topic}"
        return message.value()
    finally:
        consumer.close()


def test_undecodable_messages_are_set_aside_with_their_coordinates(sandbox, pipeline, kafka_bootstrap):
    """One message that is no Apicurio-framed Avro, one framed with the topic's schema id and a body cut off."""
    topic = sandbox.topology.topic("ems", "category")
    header = first_message(kafka_bootstrap, topic)[:9]
    delivered = []
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "log_level": 0})
    for value in (b"\x01not avro at all", header):
        producer.produce(topic, key=b"poison", value=value,
                         on_delivery=lambda err, msg: delivered.append((msg.partition(), msg.offset())))
    producer.flush(30)
    summaries = pipeline.run_once()
    assert sum(s.get("quarantined", 0) for s in summaries) >= 2
    assert any("quarantine_path" in s for s in summaries), "the run reports where the messages went"
    reasons = []
    for partition, offset in delivered:
        quarantined = pipeline.spark.read.parquet(pipeline.config.quarantine_path) \
            .filter(f"topic = '{topic}' AND partition = {partition} AND offset = {offset}").collect()
        assert len(quarantined) == 1, f"offset {offset} set aside once"
        reasons.append(quarantined[0]["reason"])
    schema_id = int.from_bytes(header[1:9], "big")
    assert reasons[0].startswith("not Apicurio-framed")
    assert reasons[1] == f"body does not decode with schema id {schema_id}"


FIRST_VERSION = {"type": "record", "name": "Value", "fields": [
    {"name": "id", "type": "int"}, {"name": "name", "type": ["null", "string"]},
    {"name": "day", "type": ["null", {"type": "int", "connect.name": "io.debezium.time.Date"}]}]}
SECOND_VERSION = FIRST_VERSION | {"fields": [*FIRST_VERSION["fields"], {"name": "added", "type": ["null", "long"]}]}


def framed_avro(schema_id: int, schema: dict, record: dict) -> bytes:
    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(schema), record)
    return b"\x00" + schema_id.to_bytes(8, "big") + body.getvalue()


def test_one_batch_of_two_schema_versions_and_a_body_that_does_not_decode(spark):
    """A topic's messages of two schema versions decode into one frame (a column the first lacks is null there, and
    Debezium's epoch days are dates in both); a framed message whose body the schema cannot read is set aside with
    its schema id, and the others are kept."""
    schemas = {41: json.dumps(FIRST_VERSION), 42: json.dumps(SECOND_VERSION)}
    truncated = framed_avro(42, SECOND_VERSION, {"id": 3, "name": "cut short", "day": 1, "added": 2**40})[:-4]
    messages = [framed_avro(41, FIRST_VERSION, {"id": 1, "name": "first", "day": 13926}),
                framed_avro(42, SECOND_VERSION, {"id": 2, "name": None, "day": 0, "added": 7}), truncated]
    at = dt.datetime(2026, 1, 1)
    batch = spark.createDataFrame([("t", 0, offset, at, value) for offset, value in enumerate(messages)],
                                  "topic string, partition int, offset long, timestamp timestamp, value binary")
    decoded = decode(batch, {"t": "table"}, SimpleNamespace(get=schemas.get))  # the registry's schemas by id
    try:
        changes = decoded.tables["table"]
        assert changes.columns == [*KAFKA_COLUMNS, "_schema_id", "id", "name", "day", "added"]
        rows = {row["id"]: row.asDict() for row in changes.collect()}
        assert rows.keys() == {1, 2}
        assert (rows[1]["name"], rows[1]["day"], rows[1]["added"], rows[1]["_schema_id"]) == \
            ("first", dt.date(2008, 2, 17), None, 41)
        assert (rows[2]["name"], rows[2]["day"], rows[2]["added"], rows[2]["_schema_id"]) == \
            (None, dt.date(1970, 1, 1), 7, 42)
        quarantined = [(row["offset"], row["schema_id"], row["reason"]) for row in decoded.quarantine.collect()]
        assert quarantined == [(2, 42, "body does not decode with schema id 42")]
    finally:
        decoded.release()


def test_a_table_written_with_another_bucket_count_is_refused(pipeline_factory, settle):
    """A key's file group follows from its hash and the bucket count: upserting with another count would write keys
    a second time, so the job refuses, naming both counts, and writes nothing. (Each change is in Kafka before the
    job runs: a run that finds nothing new writes nothing, and so checks nothing.)"""
    first = pipeline_factory(only=["category"], buckets=1)
    settle(["category"])
    first.run_once()
    commits = first.timeline("category")
    assert commits, "the first job wrote category"
    second = first.sibling(first.config.lake, only=["category"], buckets=2)
    settle(["category"])
    with pytest.raises(Exception, match=r"another number of\s+buckets \(1, this job writes 2\)"):
        second.run_once()
    assert second.timeline("category") == commits
