"""Which Kafka events the oracle counts as re-delivered: past the round's floor, and all of a micro-batch Spark ran
again after a restart (its commit rewrites keys whose changes lie below the floor, with the values they had)."""

from __future__ import annotations

from cdc_sandbox.harness.checking.landing import reread_from
from cdc_sandbox.harness.running.timeline import Commit

FLOOR = {0: 111}
STARTS = {10: {"0": 85}, 11: {"0": 111}}


def commit(instant: str, batch: int | None) -> Commit:
    return Commit(instant, instant, "commit", 1, batch, "UPSERT")


def test_batches_after_the_previous_rounds_keep_the_floor():
    since = [commit("3", 11), commit("4", 12)]
    assert reread_from(FLOOR, commit("2", 10), since, STARTS.get) == FLOOR


def test_a_batch_run_again_is_read_from_its_start():
    since = [commit("3", 10), commit("4", 10), commit("5", 11)]
    assert reread_from(FLOOR, commit("2", 10), since, STARTS.get) == {0: 85}


def test_a_start_past_the_floor_does_not_raise_it():
    assert reread_from({0: 50}, commit("2", 10), [commit("3", 10)], STARTS.get) == {0: 50}


def test_a_partition_only_the_batch_knows_is_read_from_its_start():
    starts = {10: {"0": 85, "1": 7}}
    assert reread_from(FLOOR, commit("2", 10), [commit("3", 10)], starts.get) == {0: 85, 1: 7}


def test_commits_without_batch_ids_keep_the_floor():
    assert reread_from(FLOOR, commit("2", None), [commit("3", None)], STARTS.get) == FLOOR
    assert reread_from(FLOOR, commit("2", 10), [], STARTS.get) == FLOOR


def test_the_first_batch_starts_where_the_job_was_told_to_start_and_earliest_counts_from_zero():
    from cdc_sandbox.harness.running.checkpoint import batch_start_offsets

    branch = {"tickit.ems.category": {"0": 120, "1": -2}}
    assert batch_start_offsets(None, "s3a://lake/checkpoint", 0, branch) == {"tickit.ems.category": {"0": 120, "1": 0}}
    assert batch_start_offsets(None, "s3a://lake/checkpoint", 0) == {}
