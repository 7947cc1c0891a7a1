"""The built package holds what the sandbox reads at run time, says what it needs in ranges, and names itself."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from tests import PROJECT_ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    """The wheel built from the source archive, as an index would build it."""
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([Path(sys.executable).parent / "uv", "build", "-q", "-o", out, PROJECT_ROOT], check=True,
                   capture_output=True, timeout=300)
    return zipfile.ZipFile(next(out.glob("*.whl")))


def metadata(wheel: zipfile.ZipFile, name: str) -> str:
    return wheel.read(next(path for path in wheel.namelist() if path.endswith(f".dist-info/{name}"))).decode()


def test_every_file_of_the_package_is_in_the_wheel(wheel):
    tracked = subprocess.run(["git", "ls-files", "cdc_sandbox"], cwd=PROJECT_ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    missing = sorted(set(tracked) - set(wheel.namelist()))
    assert tracked and not missing, f"add them to [tool.setuptools.package-data]: {missing}"


def test_one_top_level_package_and_nothing_of_the_checkout(wheel):
    tops = {path.split("/")[0] for path in wheel.namelist() if not path.split("/")[0].endswith(".dist-info")}
    assert tops == {"cdc_sandbox"}
    assert not [path for path in wheel.namelist() if "__pycache__" in path or path.startswith("cdc_sandbox/.sandbox")]


def test_dependencies_are_ranges_and_the_metadata_is_complete(wheel):
    fields = Parser().parsestr(metadata(wheel, "METADATA"))
    requires = fields.get_all("Requires-Dist")
    assert requires and not [line for line in requires if "==" in line.split(";")[0]], requires
    assert any(line.startswith("pyspark") and "<3.6" in line for line in requires)
    assert {"sqlserver", "compose", "bench"} <= set(fields.get_all("Provides-Extra"))
    assert fields["License-Expression"] == "MIT" and fields["Summary"] and fields["Requires-Python"]
    assert "LICENSE" in metadata(wheel, "RECORD")


def test_the_command_and_the_pytest_plugin_are_declared(wheel):
    entry_points = metadata(wheel, "entry_points.txt")
    assert "sandbox = cdc_sandbox.cli:app" in entry_points
    assert "cdc_sandbox = cdc_sandbox.harness.driving.pytest_plugin" in entry_points
