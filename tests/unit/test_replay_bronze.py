"""An archive from the job's bronze files, without S3: every Parquet file under the bronze path read back into
each partition's messages in offset order, a message kept twice kept once, other topics left out on request."""

from __future__ import annotations

import base64
import datetime as dt
import io

import pyarrow as pa
import pyarrow.parquet as pq

from cdc_sandbox.replay import bronze

MOMENT = dt.datetime(2026, 11, 29, 12, 0, 0, 123000)


def parquet(rows: list[dict]) -> bytes:
    schema = pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
                        ("timestamp", pa.timestamp("us")), ("key", pa.binary()), ("value", pa.binary())])
    out = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), out)
    return out.getvalue()


def row(topic: str, partition: int, offset: int, value: bytes | None = b"v") -> dict:
    return {"topic": topic, "partition": partition, "offset": offset, "timestamp": MOMENT, "key": b"k%d" % offset,
            "value": value}


class FakeS3:
    """The two calls `from_bronze` makes: a paginated listing and a get."""

    def __init__(self, objects: dict[str, bytes]):
        self.objects = objects

    def get_paginator(self, name):
        objects = self.objects

        class Pages:
            def paginate(self, Bucket, Prefix):
                yield {"Contents": [{"Key": key} for key in sorted(objects) if key.startswith(Prefix)]}
        return Pages()

    def get_object(self, Bucket, Key):
        return {"Body": io.BytesIO(self.objects[Key])}


def test_bronze_files_become_each_partitions_messages_in_offset_order():
    venue = "lake/bronze/changes/table=venue"
    s3 = FakeS3({
        f"{venue}/batch_id=1/part-0.parquet": parquet([row("t.venue", 0, 5), row("t.venue", 0, 3)]),
        f"{venue}/batch_id=2/part-0.parquet": parquet([row("t.venue", 0, 5), row("t.venue", 1, 0, None)]),
        "lake/bronze/changes/table=date/batch_id=1/part-0.parquet": parquet([row("t.date", 0, 9)]),
        "lake/bronze/changes/_SUCCESS": b"",
        "other/bronze/changes/table=venue/batch_id=1/part-0.parquet": parquet([row("t.venue", 0, 1)]),
    })
    messages = bronze.bronze_messages(s3, "s3a://bucket/lake/bronze/changes")
    assert {topic: {p: [line["offset"] for line in lines] for p, lines in parts.items()}
            for topic, parts in messages.items()} == {"t.venue": {0: [3, 5], 1: [0]}, "t.date": {0: [9]}}
    first = messages["t.venue"][0][0]
    assert base64.b64decode(first["key"]) == b"k3" and base64.b64decode(first["value"]) == b"v"
    assert first["timestamp"] == int(MOMENT.replace(tzinfo=dt.timezone.utc).timestamp() * 1000)
    assert messages["t.venue"][1][0]["value"] is None and first["headers"] == []
    assert set(bronze.bronze_messages(s3, "s3a://bucket/lake/bronze/changes", ["t.date"])) == {"t.date"}
