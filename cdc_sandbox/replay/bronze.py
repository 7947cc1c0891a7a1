"""An incident archive from bronze instead of Kafka: the messages the job kept as it read them.

The built-in job appends every micro-batch's messages to `<lake>/bronze/changes/table=<t>/batch_id=<n>/` (Parquet:
topic, partition, offset, Kafka timestamp, key and value bytes as read). When the topics have been cut by retention,
that is the evidence left. `from_bronze` reads those files back into an archive like `record`'s, each partition's
messages in offset order (a micro-batch read twice after a crash is kept once), with every schema their framing
names from the registry. Bronze keeps no headers; the archive's messages have none.
"""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path

import pyarrow.parquet as pq

from cdc_sandbox.errors import SandboxError
from cdc_sandbox.spark_jobs.lake_layout import object_keys, split_uri
from cdc_sandbox.replay.archive import FORMAT, as_base64, schema_ids, write
from cdc_sandbox.sources.registry import RegistryClient

COLUMNS = ["topic", "partition", "offset", "timestamp", "key", "value"]


def from_bronze(s3, bronze_path: str, registry: RegistryClient, out: Path, topics: list[str] | None = None) -> dict:
    """Write an archive of the bronze files under `bronze_path` (only `topics`' messages, if given); returns its
    manifest."""
    messages = bronze_messages(s3, bronze_path, topics)
    if not messages:
        raise SandboxError(f"no bronze messages under {bronze_path}" + (f" of {', '.join(topics)}" if topics else ""),
                           "name the lake the job wrote (its bronze is <lake>/bronze/changes)")
    schemas = {global_id: registry.schema_by_global_id(global_id) for global_id in sorted(schema_ids(messages))}
    manifest = {"format": FORMAT, "recorded_at": dt.datetime.now(dt.timezone.utc).isoformat(), "bronze": bronze_path,
                "registry": registry.api_url,
                "topics": {topic: {str(p): {"from_offset": lines[0]["offset"], "messages": len(lines)}
                                   for p, lines in partitions.items()} for topic, partitions in messages.items()},
                "schemas": sorted(schemas), "connectors": []}
    write(out, manifest, messages, schemas, {})
    return manifest


def bronze_messages(s3, bronze_path: str, topics: list[str] | None = None) -> dict[str, dict[int, list[dict]]]:
    """{topic: {partition: archive lines in offset order}} of every bronze file under `bronze_path`."""
    bucket, prefix = split_uri(bronze_path)
    by_place: dict[tuple[str, int, int], dict] = {}
    for key in object_keys(s3, bucket, prefix + "/"):
        if not key.endswith(".parquet"):
            continue
        body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        for row in pq.read_table(io.BytesIO(body), columns=COLUMNS).to_pylist():
            if topics is None or row["topic"] in topics:
                by_place.setdefault((row["topic"], row["partition"], row["offset"]), _as_line(row))
    messages: dict[str, dict[int, list[dict]]] = {}
    for (topic, partition, _), line in sorted(by_place.items()):
        messages.setdefault(topic, {}).setdefault(partition, []).append(line)
    return messages


def _as_line(row: dict) -> dict:
    # Bronze keeps no timestamp type: Kafka's default, the producer's create time (1), as Debezium's messages have.
    return {"offset": row["offset"], "timestamp": _epoch_ms(row["timestamp"]), "timestamp_type": 1,
            "key": as_base64(row["key"]), "value": as_base64(row["value"]), "headers": []}


EPOCH = dt.datetime(1970, 1, 1)


def _epoch_ms(moment: dt.datetime) -> int:
    """Milliseconds since the epoch, exactly (Spark writes Kafka's timestamp as an instant: UTC)."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return (moment - EPOCH) // dt.timedelta(milliseconds=1)
