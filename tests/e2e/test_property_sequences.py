"""Property: after any sequence of source changes, with any micro-batch boundaries and job restarts, silver and time
travel match the source. The fuzzer (`cdc_sandbox.harness.driving.fuzz`) draws the sequences over all seven tables from a seed
(`SANDBOX_PROPERTY_SEED`); the budget is `SANDBOX_FUZZ_MINUTES` of examples when set (`make fuzz`), otherwise
`SANDBOX_PROPERTY_EXAMPLES` examples. A failing example is shrunk against fresh lakes (for at most
`SANDBOX_FUZZ_SHRINK_MINUTES`) and written to reports/fuzz/ as a scenario file that `sandbox scenario run` replays."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from cdc_sandbox.harness.driving import fuzz

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SEED = int(os.environ.get("SANDBOX_PROPERTY_SEED", "41"))
REPORTS = Path("reports/fuzz")


def budget() -> fuzz.Budget:
    minutes = os.environ.get("SANDBOX_FUZZ_MINUTES")
    if minutes:
        return fuzz.Budget(minutes=float(minutes))
    return fuzz.Budget(examples=int(os.environ.get("SANDBOX_PROPERTY_EXAMPLES", "2")))


def test_random_change_sequences_keep_silver_and_time_travel_equal_to_the_source(
        pipeline_factory, oracle_factory, mutator, sandbox, spark, lake_branches, request):
    pipeline = pipeline_factory(**fuzz.job_mode(SEED))  # every table, in the run's mode
    say = print if request.config.getoption("capture") == "no" else (lambda line: None)
    say(f"fuzz: seed {SEED}, job {fuzz.job_mode(SEED) or 'as by default'}, {budget().describe(0)}")
    fuzzer = fuzz.Fuzzer(pipeline, oracle_factory(pipeline), mutator, SEED, REPORTS, say)
    failure = fuzzer.run(budget())
    if failure is None:
        fuzzer.clear()
        return
    pipeline.stop_continuous()
    replay = fuzz.Replay(sandbox, spark, lake_branches, mutator, request.config.getoption("--oracle-timeout"),
                         fuzz.signature(failure.error), REPORTS)
    shrink_minutes = float(os.environ.get("SANDBOX_FUZZ_SHRINK_MINUTES", "15"))
    found = fuzz.settle(failure, replay, time.monotonic() + shrink_minutes * 60, REPORTS, SEED, say)
    pytest.fail(found.message, pytrace=False)
