"""The CPU account: a process's core-seconds land under its kind, only what is ours is counted, and a process that
exits between two readings keeps what it spent until the last one."""

from __future__ import annotations

import subprocess
import sys

import psutil

from cdc_sandbox.stack.process import SERVICE_MARK
from cdc_sandbox.stack.cpu_account import CpuAccount, kind, measure, own_and_services, spent_between

BURN = "import time\nend = time.process_time() + {seconds}\nwhile time.process_time() < end: pass"


def burn(seconds: float) -> None:
    subprocess.run([sys.executable, "-c", BURN.format(seconds=seconds)], check=True)


def test_a_child_that_burns_cpu_is_counted_under_its_kind():
    account = CpuAccount(interval=0.1, ours=own_and_services([])).start()
    before = account.totals()
    burn(1.0)
    spent = spent_between(before, account.stop())
    assert 0.7 <= spent.get("python", 0.0) <= 1.5, spent
    assert account.started()["python"] >= 1


def test_a_shell_that_execs_its_program_is_counted_under_the_program():
    """spark-submit and the services' start scripts are shells that `exec` a JVM: the same process, renamed."""
    account = CpuAccount(interval=0.1, ours=own_and_services([])).start()
    before = account.totals()
    program = BURN.format(seconds=1.5).replace("\n", "; ").replace("; while", "\nwhile")
    subprocess.run(["bash", "-c", f"sleep 0.3; exec {sys.executable} -c '{program}'"], check=True)
    spent = spent_between(before, account.stop())
    assert spent.get("python", 0.0) >= 1.0 and spent.get("bash", 0.0) < 0.3, spent


def test_processes_that_are_not_ours_are_left_out():
    ours = own_and_services([])
    assert ours(psutil.Process())
    assert not ours(psutil.Process(1))


def test_a_measured_piece_of_work_reports_its_wall_time_and_core_seconds():
    _, cost = measure(lambda: burn(0.5))
    assert cost.wall >= 0.5 and cost.busy >= 0.4, cost
    assert "core-s in" in str(cost)


class FakeProcess:
    def __init__(self, command: list[str], environ: dict | None = None, parents: tuple = ()):
        self.command, self.env, self.parent_list = command, environ or {}, parents

    def cmdline(self):
        return self.command

    def environ(self):
        return self.env

    def parents(self):
        return list(self.parent_list)

    def name(self):
        return self.command[0]


def test_kinds_name_services_spark_jvms_and_python_runs():
    kafka = FakeProcess(["/usr/bin/java", "kafka.Kafka"], {SERVICE_MARK: "kafka"})
    assert kind(kafka) == "kafka"
    assert kind(FakeProcess(["postgres: walwriter"], parents=(FakeProcess(["postgres"], {SERVICE_MARK: "postgres"}),))) \
        == "postgres"  # a backend that wrote its title over its environment
    driver = ["/usr/lib/jvm/bin/java", "-cp", "x", "org.apache.spark.deploy.SparkSubmit", "pyspark-shell"]
    assert kind(FakeProcess(driver)) == "spark driver"
    assert kind(FakeProcess(["/usr/bin/java", "-jar", "other.jar"])) == "other java"
    assert kind(FakeProcess([".venv/bin/python", "-m", "pytest", "tests/unit"])) == "pytest"
