"""Scenario files as pytest tests: one test per file, run against the sandbox on a fresh lake of its own."""

from __future__ import annotations

import pytest

from sandbox.harness import scenario as scenarios


class ScenarioFile(pytest.File):
    def collect(self):
        try:
            spec = scenarios.load(self.path)
        except scenarios.ScenarioError as exc:
            raise self.CollectError(exc.message) from exc
        item = pytest.Function.from_parent(self, name=spec.name, callobj=_scenario_test(spec))
        item.add_marker(pytest.mark.e2e)
        item.add_marker(pytest.mark.slow)
        yield item


def _scenario_test(spec: scenarios.Scenario):
    def test_scenario(pipeline_factory, oracle_factory, mutator):
        if reason := scenarios.unavailable(spec, mutator.settings):
            pytest.skip(reason)
        job = {k: v for k, v in spec.job.items() if k != "continuous"}
        pipeline = pipeline_factory(only=spec.tables, **job)
        scenarios.run(spec, pipeline, mutator, oracle_factory(pipeline))

    test_scenario.__doc__ = spec.description
    return test_scenario
