"""The catalogue's teeth: each broken variant of the job that a scenario says it catches (`catches:`), played against
that scenario (on a project's tables, bound) and expected to fail as the scenario declares, and in no other way."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cdc_sandbox.config import Settings
from cdc_sandbox.harness.checking.catches import Catch, caught_as
from cdc_sandbox.harness.checking.oracle import Oracle, RunStats
from cdc_sandbox.harness.driving import scenario as scenarios
from cdc_sandbox.harness.running.broken_jobs import ORDERING_FIELDS, VARIANTS, take_over_ordering, unmet_need
from cdc_sandbox.sources.mutations import Mutator, added_column
from cdc_sandbox.stack.services.localstack import sandbox_s3

# A variant takes over a lake the correct job has written (branched from the baseline), so that what it gets wrong
# is the scenario's own changes; one that orders by another field changes the field the table keeps
# (`take_over_ordering`). A record key or a column's type cannot change on a written table: these variants write
# their lake from the topics' first change.
FROM_FIRST_CHANGE = {"offset-in-key", "money-as-double"}
# On a project's tables the others break the job once silver holds the scenario's starting rows: what they get wrong
# is the scenario's own changes, not the rows an earlier run left under its keys (a team runs the catalogue again
# and again). One that fixes a table's columns sees the start too.
FROM_THE_START = {"dropped-added-column"}
TABLE_ARGUMENT = {"skip-table"}  # variants given the table they break: the one their catches name


class VariantMissed(AssertionError):
    """The scenario did not catch the variant as it declares."""


def unmet(variant: str, spec: scenarios.Scenario, settings: Settings) -> str:
    """What the scenario's tables, with the columns its steps add, lack for the variant to show ("" when nothing;
    a variant given the table it breaks needs nothing more)."""
    if variant in TABLE_ARGUMENT:
        return ""
    added = {}
    for step in scenarios.changes(spec):
        if step.kind == "add_column":
            added.setdefault(step.args["table"], []).append(added_column(step.args["column"], step.args["type"]))
    tables = [replace(spec.schemas[t], columns=(*spec.schemas[t].columns, *added.get(t, []))) for t in spec.tables]
    return unmet_need(variant, settings, tables)


def break_job(patch: pytest.MonkeyPatch, variant: str, catches: tuple[Catch, ...]) -> None:
    VARIANTS[variant](patch, **({"table": catches[0].table} if variant in TABLE_ARGUMENT else {}))


def play(variant: str, spec: scenarios.Scenario, job: dict, make_pipeline, settings: Settings, mutator: Mutator,
         timeout: float, patch: pytest.MonkeyPatch) -> AssertionError:
    """The scenario played under `job` by the job broken as `variant` (`make_pipeline` as the plugin's
    `cdc_pipeline_factory`); the verdict that caught it. Raises VariantMissed when the scenario passed."""
    catches = spec.catches[variant]
    first_change = variant in FROM_FIRST_CHANGE
    if first_change:
        break_job(patch, variant, catches)
    pipeline = make_pipeline(only=spec.tables, branch=not first_change, **scenarios.pipeline_options(spec, job))
    pipeline.run_once()  # the topics' backlog, or the branch's gap by the correct job

    def broken() -> None:
        if variant in ORDERING_FIELDS:
            take_over_ordering(sandbox_s3(settings), pipeline.config.lake, spec.tables, variant)
        break_job(patch, variant, catches)

    after_given = spec.bound and variant not in FROM_THE_START
    if not first_change and not after_given:
        broken()
    oracle = Oracle(settings, pipeline, mutator, timeout=timeout, stats=RunStats())
    try:
        scenarios.run(spec, pipeline, mutator, oracle, job=job,
                      on_given=broken if not first_change and after_given else lambda: None)
    except AssertionError as caught:  # a verdict, not a time-out (SandboxError)
        return caught
    raise VariantMissed(f"{variant}: the scenario passed with the broken job; it should have failed with "
                        + " or ".join(map(str, catches)))


def judge(variant: str, spec: scenarios.Scenario, caught: AssertionError) -> str:
    """"" when the verdict is one the scenario declares for the variant, else what it was instead."""
    return caught_as(caught, spec.catches[variant])
