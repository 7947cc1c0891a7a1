"""A Spark standalone cluster as a sandbox service: a master and two workers, started from the installed PySpark's
own launcher (`bin/spark-class`; the wheel has no `start-master.sh`), each with its work directory and log.

Optional (`sandbox up --with spark-cluster`, then remembered by the sandbox's state until `sandbox reset`). A job
submitted to it (`sandbox job run --master`, `pipeline_factory(master=...)`) runs its tasks in executors the workers
start: JVMs and Python workers apart from the driver, in the workers' own directories, as on EMR, YARN or Kubernetes.
"""

from __future__ import annotations

import requests

from cdc_sandbox.config import Settings
from cdc_sandbox.stack.services.base import NativeService, ServiceStatus
from cdc_sandbox.stack.spark_home import spark_home

CLUSTER = "spark-cluster"  # its name for `sandbox up --with`
WORKER_CORES = 1  # a core each: the two workers share this machine's two cores
WORKER_MEMORY = "1536m"  # what each worker offers its executors
DAEMON_MEMORY = "256m"  # the master's and workers' own heaps: they only schedule
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
# A worker removes the directories of applications that ended (each executor's log and fetched files) after a day.
WORKER_OPTS = "-Dspark.worker.cleanup.enabled=true -Dspark.worker.cleanup.appDataTtl=86400"
# The workers, and so their executors, run in a zone of their own, as a cluster's nodes may, while every driver the
# sandbox starts runs in UTC: code that reads the process's zone instead of the session's shows it on the cluster.
WORKER_ZONE = "America/New_York"


def master_url(settings: Settings) -> str:
    return f"spark://{settings.endpoint('spark_master').address}"


def ui_url(settings: Settings, service: str) -> str:
    return f"http://{settings.endpoint(f'{service}_ui').address}"


def master_state(settings: Settings) -> dict:
    """The master's own account of the cluster (its web UI's JSON): status, workers, applications."""
    return requests.get(f"{ui_url(settings, 'spark_master')}/json/", timeout=3).json()


def alive_workers(settings: Settings) -> list[dict]:
    return [worker for worker in master_state(settings)["workers"] if worker["state"] == "ALIVE"]


def executors_of(settings: Settings, worker: str, app_id: str) -> list[dict]:
    """The executors (running or finished) a worker started for an application, from the worker's web UI."""
    state = requests.get(f"{ui_url(settings, worker)}/json/", timeout=3).json()
    return [executor for executor in state["executors"] + state["finishedexecutors"] if executor["appid"] == app_id]


class SparkDaemon(NativeService):
    """The master or a worker: `spark-class <main class> <arguments>`, bound to the sandbox's loopback address."""

    start_timeout = 90
    main_class = ""

    def arguments(self) -> list[str]:
        raise NotImplementedError

    @property
    def ports(self) -> list[int]:
        return [self.endpoint.port, self.settings.endpoint(f"{self.name}_ui").port]

    def prepare(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)

    def command(self) -> list[str]:
        return [str(spark_home(self.settings) / "bin" / "spark-class"), self.main_class, *self.arguments()]

    def environment(self) -> dict[str, str]:
        # SPARK_LOCAL_IP binds every port the daemons and their executors open (RPC, web UI, block manager).
        return {"SPARK_HOME": str(spark_home(self.settings)), "SPARK_LOCAL_IP": self.endpoint.host,
                "SPARK_DAEMON_MEMORY": DAEMON_MEMORY, "SPARK_WORKER_OPTS": WORKER_OPTS,
                "SPARK_CONF_DIR": str(self.conf_dir)}

    def version(self) -> str:
        import pyspark

        return pyspark.__version__


class SparkMaster(SparkDaemon):
    name = "spark_master"
    main_class = MASTER_CLASS

    def arguments(self) -> list[str]:
        return ["--host", self.endpoint.host, "--port", str(self.endpoint.port),
                "--webui-port", str(self.settings.endpoint("spark_master_ui").port)]

    def is_ready(self) -> bool:
        return master_state(self.settings)["status"] == "ALIVE"

    def status(self) -> ServiceStatus:
        """The master's URL and the workers alive under it."""
        found = super().status()
        if found.state == "running":
            workers = alive_workers(self.settings)
            found.note = (f"{master_url(self.settings)}: {len(workers)} workers alive ("
                          + ", ".join(f"{w['host']}:{w['port']}, {w['cores']} cores, {w['memory']} MiB"
                                      for w in workers) + ")")
        return found


class SparkWorker(SparkDaemon):
    main_class = WORKER_CLASS

    def environment(self) -> dict[str, str]:
        return {**super().environment(), "TZ": WORKER_ZONE}

    def arguments(self) -> list[str]:
        return ["--host", self.endpoint.host, "--port", str(self.endpoint.port),
                "--webui-port", str(self.settings.endpoint(f"{self.name}_ui").port),
                "--cores", str(WORKER_CORES), "--memory", WORKER_MEMORY, "--work-dir", str(self.data_dir / "work"),
                master_url(self.settings)]

    def is_ready(self) -> bool:
        """Registered with the master and alive there."""
        return any(worker["port"] == self.endpoint.port for worker in alive_workers(self.settings))


class SparkWorker1(SparkWorker):
    name = "spark_worker_1"


class SparkWorker2(SparkWorker):
    name = "spark_worker_2"


MASTER = (SparkMaster,)
WORKERS = (SparkWorker1, SparkWorker2)
