"""`make bench`'s figures for incident archives: the last 100,000 messages of `sale`'s topic recorded (`sandbox
record`), then replayed on a new lake with every commit checked (`sandbox replay`); the replay's topics and lake
are removed after."""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


from cdc_sandbox import kafka_clients
from cdc_sandbox.stack.cpu_account import Cost, measure
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


@dataclass(frozen=True)
class Replayed:
    topic: str
    recorded_seconds: float
    archive_mib: float
    verdict: object  # replay.run's verdict
    cost: Cost  # of the replay alone


def record_and_replay(settings: Settings, events: int) -> Replayed | str:
    """Record the last `events` messages of `TABLE`'s topic and replay them on a new lake with every commit checked
    (its topics and lake removed after); or why it cannot."""
    bootstrap = settings.endpoint("kafka").address
    topic = sandbox_job.job_config(settings, only=[TABLE]).spec(TABLE).topic
    held = watermarks(bootstrap, [topic]).get(topic, {})
    if len(held) != 1 or held[0][1] - held[0][0] < events:
        return f"{topic} holds fewer than {events:,} messages in one partition (`sandbox load`)"
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "bench.tar.gz"
        started = time.monotonic()
        archive.record(bootstrap, RegistryClient(settings.registry_api_url), [topic], path,
                       archive.Range(from_offset=held[0][1] - events))
        recorded = time.monotonic() - started
        name = f"bench-{int(time.time())}"
        verdict = None
        try:
            verdict, cost = measure(lambda: replay(settings, path, name))
        finally:
            _remove(settings, name, [topic], verdict.lake if verdict else None)
        return Replayed(topic, recorded, path.stat().st_size / 2**20, verdict, cost)


def report(settings: Settings, results: Results) -> None:
    done = record_and_replay(settings, EVENTS)
    if isinstance(done, str):
        results.say(f"record and replay: {done}")
        return
    results.add("Incident archives", "record.seconds", f"`sandbox record` of {EVENTS:,} messages",
                done.recorded_seconds, "s", f"`sandbox record` of the last {EVENTS:,} messages of {done.topic}: "
                f"{done.recorded_seconds:.1f} s, {done.archive_mib:.1f} MiB")
    commits = sum(table.commits for table in done.verdict.tables)
    results.add("Incident archives", "replay.seconds", f"`sandbox replay` of {EVENTS:,} messages on a new lake",
                done.cost.wall, "s", f"`sandbox replay` of that archive on a new lake: {done.cost}, {commits} commits "
                f"checked through both readers, {'as recorded' if done.verdict.passed else 'WRONG'}")


def _remove(settings: Settings, name: str, topics: list[str], lake: str | None) -> None:
    """The replay's topics and its lake (if it got as far), once it is measured."""
    if lake:
        sandbox_job.delete_lake(settings, sandbox_job.job_config(settings, lake=lake))
    admin = kafka_clients.admin(settings.endpoint("kafka").address)
    present = set(admin.list_topics(timeout=10).topics)
    doomed = [replay_topic(name, topic) for topic in topics if replay_topic(name, topic) in present]
    for future in admin.delete_topics(doomed).values() if doomed else []:
        future.result()
