"""Whether the changes made while the job was paused landed in one commit, for jobs with and without positions."""

from cdc_sandbox.harness.checking.landing import _split_by_commit, _split_by_position
from cdc_sandbox.harness.running.timeline import Commit


def commit(instant: str, position: int | None = None, operation: str = "upsert") -> Commit:
    return Commit(instant, instant + "9", "commit", position, None, operation)


def test_a_positioned_job_must_hold_every_paused_change_in_its_first_commit():
    assert _split_by_position([commit("2", 14), commit("3", 20)], 14) is None
    assert _split_by_position([commit("2", 11), commit("3", 14)], 14) == "2 reached 11"
    assert _split_by_position([], 14) == "(none) reached -"


def test_a_positioned_job_is_judged_on_its_first_commit_that_holds_positions():
    assert _split_by_position([commit("2"), commit("3", 14)], 14) is None


def test_a_job_without_positions_must_write_them_in_the_commit_the_round_awaited():
    awaited = commit("3")
    assert _split_by_commit([commit("2", operation="compact"), awaited], awaited) is None
    assert _split_by_commit([commit("2"), awaited], awaited) == "2 is not the commit that holds them, 3"
    assert _split_by_commit([], awaited) == "(none) is not the commit that holds them, 3"
