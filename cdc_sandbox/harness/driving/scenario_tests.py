"""Scenario files as pytest tests: one test per file and job, run against the sandbox on a fresh lake of its own. A
shipped scenario on a project other than TICKIT is bound to the project's tables (`binding`); one that no table can
play is a skipped test that says what the tables lack."""

from __future__ import annotations

import pytest

from cdc_sandbox.harness.driving import binding, teeth
from cdc_sandbox.harness.driving import scenario as scenarios

NOT_APPLICABLE = "not applicable: "  # how a skipped catalogue test's reason starts


class ScenarioFile(pytest.File):
    def collect(self):
        try:
            spec = binding.load(self.path)
        except binding.NotApplicable as exc:
            home = scenarios.validate(scenarios.read(self.path), self.path, home=True)
            yield from self._items(home, lambda job: _not_applicable(exc.reason), home.tables)
            for variant in home.catches if self.config.getoption("--sandbox-catalogue-teeth", False) else ():
                yield from self._items(home, lambda job: _not_applicable(exc.reason), home.tables, variant)
            return
        except scenarios.ScenarioError as exc:
            raise self.CollectError(exc.message) from exc
        home_tables = scenarios.read(self.path)["tables"]
        yield from self._items(spec, lambda job: _scenario_test(spec, job), home_tables)
        if self.config.getoption("--sandbox-catalogue-teeth", False):
            for variant in spec.catches:
                yield from self._items(spec, lambda job, variant=variant: _teeth_test(spec, job, variant),
                                       home_tables, variant)

    def _items(self, spec: scenarios.Scenario, test_of, home_tables: list[str], variant: str | None = None):
        for job in spec.jobs:
            name = spec.name if len(spec.jobs) == 1 else f"{spec.name} [{job_label(job)}]"
            if variant:
                name = f"{name} catches {variant}"
            item = pytest.Function.from_parent(self, name=name, callobj=test_of(job))
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.slow)
            item.catalogue_entry = CatalogueEntry(spec.name, job_label(job), dict(zip(home_tables, spec.tables)),
                                                  self.path.stem, variant)
            yield item


class CatalogueEntry:
    """What a report says of a scenario test: the incident, its job, which table played each of its tables, and for
    a broken variant of the job, which."""

    def __init__(self, incident: str, job: str, tables: dict[str, str], file: str, variant: str | None = None):
        self.incident, self.job, self.tables, self.file, self.variant = incident, job, tables, file, variant
        self.verdict, self.detail = "not run", ""


def job_label(job: dict) -> str:
    """e.g. `continuous, MERGE_ON_READ, hard_deletes`."""
    parts = ["continuous" if job.get("continuous") else "run once", job.get("table_type", "COPY_ON_WRITE")]
    return ", ".join(parts + [f"{k}={v}" for k, v in job.items() if k not in ("continuous", "table_type")])


def _not_applicable(reason: str):
    def test_scenario():
        pytest.skip(NOT_APPLICABLE + reason)

    return test_scenario


def _teeth_test(spec: scenarios.Scenario, job: dict, variant: str):
    def test_variant_caught(request, cdc_pipeline_factory, cdc_mutator, monkeypatch):  # the plugin's own fixtures
        if reason := scenarios.unavailable(spec, cdc_mutator.settings):
            pytest.skip(reason)
        if reason := teeth.unmet(variant, spec, cdc_mutator.settings):
            pytest.skip(NOT_APPLICABLE + reason)
        if request.config.getoption("--sandbox-job") != "builtin":
            pytest.skip(NOT_APPLICABLE + "the broken variants patch the built-in job, not the job under test")
        caught = teeth.play(variant, spec, job, cdc_pipeline_factory, cdc_mutator.settings, cdc_mutator,
                            request.config.getoption("--oracle-timeout"), monkeypatch)
        if wrong := teeth.judge(variant, spec, caught):
            raise teeth.VariantMissed(f"{variant}: {wrong}")

    test_variant_caught.__doc__ = f"The job broken as {variant} fails this scenario as it declares."
    return test_variant_caught


def _scenario_test(spec: scenarios.Scenario, job: dict):
    def test_scenario(cdc_pipeline_factory, cdc_oracle_factory, cdc_mutator):  # the plugin's own fixtures
        if reason := scenarios.unavailable(spec, cdc_mutator.settings):
            pytest.skip(reason)
        options = scenarios.pipeline_options(spec, job)
        pipeline = cdc_pipeline_factory(only=spec.tables, **options)
        scenarios.run(spec, pipeline, cdc_mutator, cdc_oracle_factory(pipeline), job=job)

    test_scenario.__doc__ = spec.description
    return test_scenario
