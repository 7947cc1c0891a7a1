"""Apicurio Registry, the real server (Quarkus runner from Maven Central), storing schemas in a file-backed H2."""

from __future__ import annotations

import requests

from cdc_sandbox.errors import SandboxError
from cdc_sandbox.stack import declarations, jvm
from cdc_sandbox.stack.services.base import JvmService


class Apicurio(JvmService):
    name = "apicurio"
    start_timeout = 120

    def runner_jar(self) -> str:
        jars = sorted((jvm.artifacts_dir(self.settings) / "apicurio").glob("apicurio-registry-app-*-runner.jar"))
        if not jars:
            raise SandboxError(f"no Apicurio runner jar in {jvm.artifacts_dir(self.settings) / 'apicurio'}",
                               "run `sandbox up`: it resolves the server through Maven")
        return str(jars[-1])

    def prepare(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)

    def classpath(self) -> str:
        return self.runner_jar()

    def launch(self) -> list[str]:
        return ["-jar", self.runner_jar()]

    def command(self) -> list[str]:
        return self.java(*declarations.APICURIO_HEAP, *jvm.service_options(),
                         f"-Dquarkus.http.host={self.endpoint.host}", f"-Dquarkus.http.port={self.endpoint.port}",
                         "-Dquarkus.log.console.color=false")

    def environment(self) -> dict[str, str]:
        # Schemas must outlive a restart: Kafka messages refer to them by id.
        return {"REGISTRY_DATASOURCE_URL": f"jdbc:h2:file:{self.data_dir / 'registry'}"}

    def is_ready(self) -> bool:
        return requests.get(f"{self.url}/health/ready", timeout=3).status_code == 200

    def version(self) -> str:
        return requests.get(f"{self.settings.registry_api_url}/system/info", timeout=3).json()["version"]
