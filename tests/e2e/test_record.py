"""`sandbox record` on the running sandbox: a change made a moment ago is in the archive with the schema it names,
read back by that schema alone (no registry), and the connectors' configs come without their passwords."""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
import time

import fastavro
import pytest

from cdc_sandbox.replay.archive import read_archive
from cdc_sandbox.sources.changes import ChangeReader, end_offsets
from cdc_sandbox.sources.registry import HEADER, RegistryClient, frame_global_id

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
