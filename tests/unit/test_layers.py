"""The package's layers import one way: core <- stack <- sources <- harness, replay <- bench and the CLI; inside the
harness, its findings <- running <- checking <- driving; no module cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from cdc_sandbox.config import PACKAGE_DIR

LAYERS = {"core": 0, "spark_jobs": 0, "tickit_data": 0, "stack": 1, "sources": 2, "harness": 3, "replay": 3, "bench": 4,
          "cli": 4}
CORE = {"cdc_sandbox", "cdc_sandbox.config", "cdc_sandbox.debezium_settings", "cdc_sandbox.errors",
        "cdc_sandbox.kafka_clients", "cdc_sandbox.schema", "cdc_sandbox.sql_text", "cdc_sandbox.wait"}
HARNESS_ROLES = {"findings": 0, "running": 1, "checking": 2, "driving": 3}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> str:
    if module in CORE:
        return "core"
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or parts[1] in LAYERS else "cli"


def sandbox_imports(path: Path, known: set[str]) -> set[str]:
    """Every module of the package this file imports, also inside functions."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("cdc_sandbox")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("cdc_sandbox"):
            submodules = {f"{node.module}.{alias.name}" for alias in node.names} & known
            found |= submodules or {node.module}
    return {name for name in found if name in known}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    files = {module_name(path): path for path in PACKAGE_DIR.rglob("*.py")
             if "s3_journal" not in path.parts}  # LocalStack's hook runs inside LocalStack, not the package
    return {name: sandbox_imports(path, set(files)) - {name} for name, path in files.items()}


def test_each_module_imports_only_its_own_layer_and_those_below(graph):
    upward = [f"{module} ({layer(module)}) imports {target} ({layer(target)})"
              for module, targets in graph.items() for target in targets
              if LAYERS.get(layer(target), 0) > LAYERS.get(layer(module), 0)]
    assert not upward, "\n".join(upward)


def harness_role(module: str) -> int:
    parts = module.split(".")
    return HARNESS_ROLES[parts[2]] if len(parts) > 2 else 0


def test_the_harness_roles_import_one_way(graph):
    harness = {name for name in graph if name.startswith("cdc_sandbox.harness.")}
    assert {name.split(".")[2] for name in harness} == set(HARNESS_ROLES), "every harness module has a role"
    upward = [f"{module} imports {target}" for module in harness for target in graph[module] & harness
              if harness_role(target) > harness_role(module)]
    assert not upward, "\n".join(upward)


def test_no_import_cycle(graph):
    def cycle_from(start: str) -> list[str] | None:
        stack, path = [(start, iter(sorted(graph[start])))], [start]
        while stack:
            _, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                path.pop()
            elif child == start:
                return path + [start]
            elif child not in path:
                stack.append((child, iter(sorted(graph[child]))))
                path.append(child)
        return None

    cycles = [cycle for module in sorted(graph) if (cycle := cycle_from(module))]
    assert not cycles, " -> ".join(cycles[0])


def test_the_job_and_the_schema_stand_alone():
    """The Spark job runs under spark-submit without the harness; TICKIT is plain data over the schema module."""
    for package in ("spark_jobs", "tickit_data"):
        own = (f"from cdc_sandbox.{package}.", f"from cdc_sandbox.{package} import", f"import cdc_sandbox.{package}")
        allowed = (*own, "from cdc_sandbox.schema import") if package == "tickit_data" else own
        for path in (PACKAGE_DIR / package).rglob("*.py"):
            imports = [line for line in path.read_text().splitlines()
                       if line.startswith(("import cdc_sandbox", "from cdc_sandbox"))]
            assert all(line.startswith(allowed) for line in imports), path
