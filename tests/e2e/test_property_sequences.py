"""Property: after any sequence of source changes, with any micro-batch boundaries, silver and time travel match
the source. Sequences come from hypothesis with a fixed seed; `SANDBOX_PROPERTY_EXAMPLES` sets the budget (how many
sequences), `SANDBOX_PROPERTY_SEED` the seed. Each example starts from the tables' rows before the first one,
re-established by ordinary changes, so that no budget drains a table or pushes its keys out of their type."""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings, strategies as st

from sandbox.mutations import random_value

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TABLES = ["category", "venue", "date"]  # both engines, small enough for many rounds
EXAMPLES = int(os.environ.get("SANDBOX_PROPERTY_EXAMPLES", "4"))
SEED = int(os.environ.get("SANDBOX_PROPERTY_SEED", "20081"))

change = st.tuples(st.sampled_from(["insert", "update", "delete", "update_key", "same_key_burst"]),
                   st.sampled_from(TABLES), st.integers(0, 2**32))
batch = st.tuples(st.lists(change, min_size=1, max_size=8), st.booleans())  # (changes, in one micro-batch)


@pytest.fixture
def small_pipeline(pipeline_factory):
    return pipeline_factory(only=TABLES)


@pytest.fixture
def tracking_oracle(small_pipeline, oracle_factory):
    """One oracle for all the examples of a run (hypothesis reuses function-scoped fixtures across examples)."""
    oracle = oracle_factory(small_pipeline)
    oracle.track(TABLES)
    return oracle


@pytest.fixture
def known_state(tracking_oracle, mutator):
    """The tables' rows before the first example: every example starts from them, and the run leaves them so."""
    known = {table: mutator.rows(table) for table in TABLES}
    yield known
    for table, rows in known.items():
        mutator.restore(table, rows)


@seed(SEED)
@settings(max_examples=EXAMPLES, deadline=None, database=None, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(sequence=st.lists(batch, min_size=1, max_size=3))
def test_any_sequence_of_changes_keeps_silver_and_time_travel_equal_to_the_source(sequence, small_pipeline,
                                                                                 tracking_oracle, known_state,
                                                                                 mutator):
    for table, rows in known_state.items():  # through the source: the oracle checks these changes too
        mutator.restore(table, rows)
    for changes, one_micro_batch in sequence:
        if one_micro_batch:
            tracking_oracle.pause()
        for kind, table, value in changes:
            apply_change(mutator, kind, table, random.Random(value))
        if one_micro_batch:
            tracking_oracle.resume()
        else:
            small_pipeline.run_once()
    tracking_oracle.round()
    tracking_oracle.verify_history()


def apply_change(mutator, kind: str, table: str, rng: random.Random) -> None:
    (pk,) = mutator.placement(table).table.primary_key
    row = mutator.sample_row(table, rng)
    key = {pk: row[pk]}
    if kind == "insert":
        mutator.insert(table, {**row, pk: mutator.next_key(table)})
    elif kind == "delete":
        mutator.delete(table, key)
    elif kind == "update_key":
        mutator.update_key(table, key, {pk: mutator.next_key(table)})
    else:
        columns = mutator.changeable_columns(table)
        for _ in range(3 if kind == "same_key_burst" else 1):
            column = rng.choice(columns)
            mutator.update(table, key, {column.name: random_value(column, rng)})
