"""The pytest plugin is loaded in every suite of an environment that has the package installed: it must not start
Spark's import (PySpark and py4j) there; a suite gets Spark when it uses a Spark fixture."""

from __future__ import annotations

import subprocess
import sys

pytest_plugins = ["pytester"]


def test_loading_the_plugin_imports_no_spark():
    probe = ("import sys, cdc_sandbox.harness.driving.pytest_plugin; "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]"


def test_the_harness_and_the_cli_import_without_a_dependencys_deprecation_warning():
    """A team's run shows what its own code deprecates, not what the sandbox's dependencies do (kafka-python's
    schema loading, say)."""
    probe = ("import cdc_sandbox.harness.driving.pytest_plugin, cdc_sandbox.harness.driving.scenario, cdc_sandbox.harness.driving.fuzz, "
             "cdc_sandbox.sources.topics, cdc_sandbox.cli")
    done = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", probe], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr[-2000:]


def test_every_fixture_of_the_plugin_says_what_it_gives():
    """`pytest --fixtures` shows a line for each."""
    import cdc_sandbox.harness.driving.pytest_plugin as plugin

    fixtures = {name: obj for name, obj in vars(plugin).items() if hasattr(obj, "_pytestfixturefunction")}
    assert len(fixtures) > 15
    assert [name for name, obj in fixtures.items() if not (obj.__doc__ or "").strip()] == []


def test_parallel_workers_are_refused_with_what_to_do(pytester):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider")
    assert result.ret != 0
    said = result.stdout.str() + result.stderr.str()
    assert "runs its tests in one process" in said and "Run without -n" in said


def test_a_teams_own_spark_or_sandbox_fixture_leaves_the_plugins_pipeline_alone(pytester):
    pytester.makeconftest("import pytest\n\n@pytest.fixture(scope='session')\ndef spark():\n    return 'mine'\n\n"
                          "@pytest.fixture(scope='session')\ndef sandbox():\n    return 'mine too'\n")
    pytester.makepyfile("def test_theirs(spark):\n    assert spark == 'mine'\n\n"
                        "def test_a_pipeline(pipeline):\n    pass\n")
    plan = pytester.runpytest_subprocess("--setup-plan", "-p", "no:cacheprovider").stdout.str()
    pipeline_plan = plan.split("test_a_pipeline")[0].split("test_theirs")[-1]
    assert "SETUP    S cdc_spark" in pipeline_plan and "SETUP    S cdc_sandbox " in pipeline_plan, plan
    assert "SETUP    S spark" not in pipeline_plan and "SETUP    S sandbox " not in pipeline_plan, plan
