"""The job adapter's side that needs no Spark: reading a job file, filling a team's command line, and a submitted
job's handle. (tests/e2e/test_team_job.py puts a team's job under the oracle.)"""

from __future__ import annotations

import shlex
import sys

import pytest

from cdc_sandbox.errors import SandboxError
from cdc_sandbox.harness.running import job_adapters
from cdc_sandbox.spark_jobs.job_config import JobConfig, TableSpec
from tests import PROJECT_ROOT

CONFIG = JobConfig(kafka_bootstrap="127.0.0.1:9092", registry_url="http://127.0.0.1:8080/apis/registry/v2",
                   lake="s3a://lake/test-1", tables=(TableSpec("t.ems.category", "category", ("catid",), "lsn"),),
                   starting_offsets={"t.ems.category": {"0": 41}})


def write(tmp_path, text: str):
    path = tmp_path / "job.yaml"
    path.write_text(text)
    return path


def test_the_builtin_job_records_positions_and_a_teams_job_does_not():
    assert job_adapters.load("builtin").records_positions
    team = job_adapters.load(PROJECT_ROOT / "examples" / "team_job" / "sandbox-job.yaml")
    assert (team.name, team.records_positions, team.tables) == ("team-job", False, None)  # every table
    assert team.with_settings(ordering="source_sequence").settings == {"ordering": "source_sequence"}


@pytest.mark.parametrize("text, problem", [
    ("name: x\n", "exactly one of `submit` or `callable`"),
    ("name: x\nsubmit: a\ncallable: b.py:c\n", "exactly one of `submit` or `callable`"),
    ("name: x\nsubmit: a\nretries: 3\n", "unknown keys retries"),
    ("name: [x\n", "not valid YAML"),
    ("name: x\ncallable: nowhere.py:start\n", "expected <file.py>:<function>"),
])
def test_a_wrong_job_file_says_what_is_wrong(tmp_path, text, problem):
    with pytest.raises(SandboxError, match=problem):
        job_adapters.load(write(tmp_path, text))


def test_a_missing_job_file_says_what_to_give():
    with pytest.raises(SandboxError, match="no job file"):
        job_adapters.load("no-such-job.yaml")


def test_a_command_line_gets_the_sandbox_values_quoted_and_the_settings():
    raw = {"submit": "{spark_submit} job.py --lake {lake} --from {starting_offsets} --tables {tables}",
           "once": "--once", "set": "--set {key}={value}"}
    command = job_adapters.submit_command(PROJECT_ROOT, raw, CONFIG, {"ordering": "source ts"}, once=True)
    assert command[0].endswith("spark-submit")
    assert command[1:] == ["job.py", "--lake", "s3a://lake/test-1", "--from", '{"t.ems.category": {"0": 41}}',
                           "--tables", "category", "--set", "ordering=source ts", "--once"]


def test_a_command_line_names_the_cluster_it_is_submitted_to_and_gives_its_executors_the_jars():
    raw = {"submit": "{spark_submit} --master {master} {spark_conf} job.py"}
    local = job_adapters.submit_command(PROJECT_ROOT, raw, CONFIG, {}, once=True)
    assert local[1:3] == ["--master", "local[2]"]
    on_cluster = job_adapters.submit_command(PROJECT_ROOT, raw, CONFIG, {}, once=True, master="spark://127.0.0.1:7077")
    assert on_cluster[1:3] == ["--master", "spark://127.0.0.1:7077"]
    assert any(option.startswith("--conf=spark.executor.extraClassPath=") for option in on_cluster)
    assert not any(option.startswith("--conf=spark.executor.") for option in local)


def test_a_job_run_in_the_harness_session_cannot_go_to_a_cluster(tmp_path):
    (tmp_path / "job.py").write_text("def start(spark, values, once):\n    pass\n")
    job = job_adapters.load(write(tmp_path, "name: mine\ncallable: job.py:start\n"))
    with pytest.raises(SandboxError, match="harness's own Spark session"):
        job.on_cluster("spark://127.0.0.1:7077")


def test_a_command_line_naming_an_unknown_value_is_refused():
    with pytest.raises(SandboxError, match=r"names \{kafka\}, which the sandbox does not fill"):
        job_adapters.submit_command(PROJECT_ROOT, {"submit": "job --bootstrap {kafka}"}, CONFIG, {}, once=False)


def test_a_submitted_job_that_fails_shows_its_last_output(tmp_path):
    script = "import sys; print('starting'); print('no such topic', file=sys.stderr); sys.exit(3)"
    job = job_adapters.SubmittedJob([sys.executable, "-c", script], cwd=tmp_path)
    assert job.wait() == 3
    assert job.exception() == "the job exited with code 3; its last output:\nstarting\nno such topic"


def test_a_submitted_job_stops_when_asked(tmp_path):
    job = job_adapters.SubmittedJob(shlex.split(f"{sys.executable} -c 'import signal; signal.pause()'"), cwd=tmp_path)
    assert job.exception() is None
    job.stop()
    assert job.process.returncode is not None
