"""Scenario files as pytest tests: one test per file, run against the sandbox on a fresh lake of its own."""

from __future__ import annotations

import pytest

from cdc_sandbox.harness.driving import scenario as scenarios


class ScenarioFile(pytest.File):
    def collect(self):
        try:
            spec = scenarios.load(self.path)
        except scenarios.ScenarioError as exc:
            raise self.CollectError(exc.message) from exc
        for job in spec.jobs:
            name = spec.name if len(spec.jobs) == 1 else f"{spec.name} [{job_label(job)}]"
            item = pytest.Function.from_parent(self, name=name, callobj=_scenario_test(spec, job))
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.slow)
            yield item


def job_label(job: dict) -> str:
    """e.g. `continuous, MERGE_ON_READ, hard_deletes`."""
    parts = ["continuous" if job.get("continuous") else "run once", job.get("table_type", "COPY_ON_WRITE")]
    return ", ".join(parts + [f"{k}={v}" for k, v in job.items() if k not in ("continuous", "table_type")])


def _scenario_test(spec: scenarios.Scenario, job: dict):
    def test_scenario(cdc_pipeline_factory, cdc_oracle_factory, cdc_mutator):  # the plugin's own fixtures
        if reason := scenarios.unavailable(spec, cdc_mutator.settings):
            pytest.skip(reason)
        options = scenarios.pipeline_options(spec, job)
        pipeline = cdc_pipeline_factory(only=spec.tables, **options)
        scenarios.run(spec, pipeline, cdc_mutator, cdc_oracle_factory(pipeline), job=job)

    test_scenario.__doc__ = spec.description
    return test_scenario
