"""The incident archive's format without Kafka: what `record` writes reads back whole, and an archive cut short, of
another format, or naming a schema it lacks is refused with what is wrong."""

from __future__ import annotations

import base64
import struct
import tarfile

import pytest

from cdc_sandbox.errors import SandboxError
from cdc_sandbox.replay import archive

SCHEMA = '{"type": "record", "name": "Value", "fields": [{"name": "catid", "type": "int"}]}'


def framed(global_id: int, body: bytes = b"\x02") -> str:
    return base64.b64encode(struct.pack(">bq", 0, global_id) + body).decode()


def line(offset: int, key: str | None, value: str | None) -> dict:
    return {"offset": offset, "timestamp": 1_700_000_000_000 + offset, "timestamp_type": 1, "key": key,
            "value": value, "headers": [["h", base64.b64encode(b"x").decode()]]}


MESSAGES = {"tickit.ems.category": {0: [line(5, framed(7), framed(8)), line(6, framed(7), None)],
                                    1: [line(0, None, base64.b64encode(b'{"json": true}').decode())]}}
MANIFEST = {"format": archive.FORMAT, "topics": {"tickit.ems.category": {"0": {"from_offset": 5, "messages": 2},
                                                                       "1": {"from_offset": 0, "messages": 1}}}}


def written(tmp_path, manifest=MANIFEST, schemas=None):
    path = tmp_path / "incident.tar.gz"
    archive.write(path, manifest, MESSAGES, {7: SCHEMA, 8: SCHEMA} if schemas is None else schemas,
                   {"tickit-postgres": {"connector.class": "io.debezium.connector.postgresql.PostgresConnector"}})
    return path


def test_an_archive_reads_back_as_it_was_written(tmp_path):
    read = archive.read_archive(written(tmp_path))
    assert read.messages == MESSAGES
    assert read.schemas == {7: SCHEMA, 8: SCHEMA}
    assert read.connectors["tickit-postgres"]["connector.class"].endswith("PostgresConnector")
    assert not (tmp_path / "incident.tar.gz.partial").exists()


def test_the_schema_ids_are_those_the_framed_keys_and_values_name():
    assert archive.schema_ids(MESSAGES) == {7, 8}


def test_an_archive_cut_short_is_refused(tmp_path):
    path = written(tmp_path)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(SandboxError, match="is not a whole incident archive"):
        archive.read_archive(path)


def test_an_archive_missing_a_schema_its_messages_name_is_refused(tmp_path):
    with pytest.raises(SandboxError, match=r"schema ids \[8\] that the archive does not hold"):
        archive.read_archive(written(tmp_path, schemas={7: SCHEMA}))


def test_an_archive_whose_messages_do_not_match_its_manifest_is_refused(tmp_path):
    manifest = {**MANIFEST, "topics": {"tickit.ems.category": {"0": {"from_offset": 5, "messages": 3},
                                                               "1": {"from_offset": 0, "messages": 1}}}}
    with pytest.raises(SandboxError, match="holds 2 messages, its manifest says 3"):
        archive.read_archive(written(tmp_path, manifest=manifest))


def test_another_format_or_no_manifest_is_refused(tmp_path):
    with pytest.raises(SandboxError, match="archive of format 99"):
        archive.read_archive(written(tmp_path, manifest={**MANIFEST, "format": 99}))
    bare = tmp_path / "bare.tar.gz"
    with tarfile.open(bare, "w:gz") as tar:
        tar.add(written(tmp_path), arcname="something-else")
    with pytest.raises(SandboxError, match="has no manifest.json"):
        archive.read_archive(bare)


def test_recorded_messages_decode_by_the_archives_schemas_into_events_to_fold(tmp_path):
    import datetime as dt
    import io
    import json

    import fastavro

    from cdc_sandbox.replay.fold import fold

    value_schema = {"type": "record", "name": "Value", "fields": [
        {"name": "dateid", "type": "int"},
        {"name": "caldate", "type": {"type": "int", "connect.name": "io.debezium.time.Date"}},
        {"name": "__op", "type": "string"}, {"name": "__deleted", "type": "string"},
        {"name": "__lsn", "type": "long"}]}
    key_schema = {"type": "record", "name": "Key", "fields": [{"name": "dateid", "type": "int"}]}

    def encoded(schema, global_id, record):
        body = io.BytesIO()
        fastavro.schemaless_writer(body, fastavro.parse_schema(schema), record)
        return base64.b64encode(struct.pack(">bq", 0, global_id) + body.getvalue()).decode()

    changes = [(1, 14000, "c", 10), (1, 14001, "u", 30), (1, 13999, "u", 20)]  # the last re-sent late
    lines = [line(offset, encoded(key_schema, 3, {"dateid": dateid}),
                  encoded(value_schema, 4, {"dateid": dateid, "caldate": day, "__op": op, "__deleted": "false",
                                            "__lsn": lsn}))
             for offset, (dateid, day, op, lsn) in enumerate(changes)]
    lines.append(line(3, encoded(key_schema, 3, {"dateid": 1}), None))  # a tombstone
    lines.append(line(4, base64.b64encode(b"poison").decode(), base64.b64encode(b"{}").decode()))
    manifest = {"format": archive.FORMAT, "topics": {"t": {"0": {"from_offset": 0, "messages": 5}}}}
    path = tmp_path / "dates.tar.gz"
    archive.write(path, manifest, {"t": {0: lines}}, {3: json.dumps(key_schema), 4: json.dumps(value_schema)}, {})
    events, undecodable = archive.decoded_events(archive.read_archive(path), "t")
    assert undecodable == [(0, 4)]
    assert [e.offset for e in events] == [0, 1, 2, 3] and events[0].key == {"dateid": 1} and events[3].value is None
    day = dt.date(1970, 1, 1) + dt.timedelta(days=14001)  # the change at the highest position
    assert fold(events, "lsn", ("dateid",)).live == {(1,): {"dateid": 1, "caldate": day}}
