"""`make bench`'s figures for incident archives: the last 100,000 messages of `sale`'s topic recorded (`sandbox
record`), then replayed on a new lake with every commit checked (`sandbox replay`); the replay's topics and lake
are removed after."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path


from cdc_sandbox import kafka_clients
from cdc_sandbox.bench.results import Results
from cdc_sandbox.config import Settings
from cdc_sandbox.harness.running import sandbox_job
from cdc_sandbox.replay import archive
from cdc_sandbox.replay.load import replay_topic
from cdc_sandbox.replay.run import replay
from cdc_sandbox.sources.changes import watermarks
from cdc_sandbox.sources.registry import RegistryClient

EVENTS = 100_000
TABLE = "sale"


def report(settings: Settings, results: Results) -> None:
    bootstrap = settings.endpoint("kafka").address
    topic = sandbox_job.job_config(settings, only=[TABLE]).spec(TABLE).topic
    held = watermarks(bootstrap, [topic]).get(topic, {})
    if len(held) != 1 or held[0][1] - held[0][0] < EVENTS:
        results.say(f"record and replay: {topic} holds fewer than {EVENTS:,} messages in one partition "
                    "(`sandbox load`)")
        return
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "bench.tar.gz"
        started = time.monotonic()
        archive.record(bootstrap, RegistryClient(settings.registry_api_url), [topic], path,
                       archive.Range(from_offset=held[0][1] - EVENTS))
        recorded = time.monotonic() - started
        results.add("Incident archives", "record.seconds", f"`sandbox record` of {EVENTS:,} messages", recorded, "s",
                    f"`sandbox record` of the last {EVENTS:,} messages of {topic}: {recorded:.1f} s, "
                    f"{path.stat().st_size / 2**20:.1f} MiB")
        name = f"bench-{int(time.time())}"
        started = time.monotonic()
        verdict = None
        try:
            verdict = replay(settings, path, name)
        finally:
            _remove(settings, name, [topic], verdict.lake if verdict else None)
    replayed = time.monotonic() - started
    commits = sum(table.commits for table in verdict.tables)
    results.add("Incident archives", "replay.seconds", f"`sandbox replay` of {EVENTS:,} messages on a new lake",
                replayed, "s", f"`sandbox replay` of that archive on a new lake: {replayed:.1f} s, {commits} commits "
                f"checked through both readers, {'as recorded' if verdict.passed else 'WRONG'}")


def _remove(settings: Settings, name: str, topics: list[str], lake: str | None) -> None:
    """The replay's topics and its lake (if it got as far), once it is measured."""
    if lake:
        sandbox_job.delete_lake(settings, sandbox_job.job_config(settings, lake=lake))
    admin = kafka_clients.admin(settings.endpoint("kafka").address)
    present = set(admin.list_topics(timeout=10).topics)
    doomed = [replay_topic(name, topic) for topic in topics if replay_topic(name, topic) in present]
    for future in admin.delete_topics(doomed).values() if doomed else []:
        future.result()
