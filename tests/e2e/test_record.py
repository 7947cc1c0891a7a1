"""`sandbox record` on the running sandbox: a change made a moment ago is in the archive with the schema it names,
read back by that schema alone (no registry), and the connectors' configs come without their passwords; the whole
recorded history of a table, folded, is the source table."""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
import time

import fastavro
import pytest

from cdc_sandbox.harness.checking.expected import read_source
from cdc_sandbox.harness.checking.silver import Shape
from cdc_sandbox.replay.archive import decoded_events, read_archive, record
from cdc_sandbox.replay.fold import fold
from cdc_sandbox.sources.changes import ChangeReader, end_offsets
from cdc_sandbox.sources.registry import HEADER, RegistryClient, frame_global_id
from cdc_sandbox.stack.catalog import table_schema
from cdc_sandbox.tickit_data.ddl import MYSQL

pytestmark = [pytest.mark.e2e]


def test_a_recorded_change_reads_back_from_the_archive_alone(sandbox, mutator, tmp_path):
    topic = sandbox.topology.topic(mutator.placement("category").captured.namespace, "category")
    bootstrap, registry = sandbox.endpoint("kafka").address, RegistryClient(sandbox.registry_api_url)
    since = int(time.time() * 1000) - 1000
    before = end_offsets(bootstrap, [topic])[topic]
    change = mutator.touch("category")
    with ChangeReader(bootstrap, topic, registry, from_offsets=before) as reader:
        [event] = reader.wait_for_change(change, 60)
    out = tmp_path / "incident.tar.gz"
    done = subprocess.run([sys.executable, "-m", "cdc_sandbox", "record", "-t", topic, "--since",
                           time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(since / 1000)) + "Z", "-o", str(out),
                           "--json"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    manifest = json.loads(done.stdout)

    archive = read_archive(out)
    assert archive.manifest == manifest
    lines = archive.messages[topic][event.partition]
    [line] = [line for line in lines if line["offset"] == event.offset]
    value = base64.b64decode(line["value"])
    schema = fastavro.parse_schema(json.loads(archive.schemas[frame_global_id(value)]))
    decoded = fastavro.schemaless_reader(io.BytesIO(value[HEADER.size:]), schema)
    assert decoded["catid"] == change.key["catid"] and decoded == registry.decode(value)[1]
    assert all(line["offset"] >= manifest["topics"][topic][str(event.partition)]["from_offset"] for line in lines)
    connectors = archive.connectors
    assert connectors and all(config.get("database.password") in (None, "<redacted>")
                              for config in connectors.values())


@pytest.mark.parametrize("table", ["venue", "date", "category"])
def test_the_fold_of_a_tables_whole_recorded_history_is_the_source_table(table, sandbox, mutator, tmp_path):
    """The replay's oracle against a real source: every event the topic holds (the snapshot's, every test's
    changes, truncates, columns added, dropped and added again with a default), folded by key in source-position
    order, gives the table the source holds now."""
    placement = mutator.placement(table)
    topic = sandbox.topology.topic(placement.captured.namespace, table)
    bootstrap, registry = sandbox.endpoint("kafka").address, RegistryClient(sandbox.registry_api_url)
    before = end_offsets(bootstrap, [topic])[topic]
    change = mutator.touch(table)  # its event comes after every earlier change of the table
    with ChangeReader(bootstrap, topic, registry, from_offsets=before) as reader:
        reader.wait_for_change(change, 60)
    out = tmp_path / f"{table}.tar.gz"
    record(bootstrap, registry, [topic], out)
    shape = Shape(table_schema(sandbox, table))
    kind = "binlog" if placement.dialect == MYSQL else "lsn"
    events, _ = decoded_events(read_archive(out), topic)  # without the poison messages tests wrote
    folded = fold(events, kind, shape.table.primary_key)
    expected = {key: shape.normalize([row.get(column) for column in shape.columns])
                for key, row in folded.live.items()}
    source = {shape.key_of(row): row for row in read_source(sandbox, placement, shape)}
    wrong = sorted((key for key in source.keys() | expected.keys() if source.get(key) != expected.get(key)), key=str)
    assert not wrong, "\n".join(f"{key}: source {source.get(key)}, fold {expected.get(key)} "
                                f"({folded.culprit(key)})" for key in wrong[:5])
