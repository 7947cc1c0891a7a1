"""`sandbox init` writes a starter project a team can run as it is, and running it again changes nothing."""

from __future__ import annotations

import subprocess
import sys

from cdc_sandbox import starter
from cdc_sandbox.config import Settings, load_topology


def init(directory) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cdc_sandbox", "init", str(directory)], capture_output=True, text=True,
                          timeout=60, check=True)


def test_the_starter_is_a_project_the_sandbox_reads_with_its_state_beside_it(tmp_path):
    directory = tmp_path / "Orders-Service"
    said = init(directory).stdout
    assert "sandbox up && sandbox load && pytest tests" in said
    topology = load_topology(directory / "cdc-sandbox.yaml")
    assert [t.name for t in topology.tables] == ["orders"] and topology.topic_prefix == "orders_service"
    assert topology.lake_bucket == "orders-service-lake"
    settings = Settings.load({"SANDBOX_PROJECT": str(directory), "SANDBOX_BACKEND": "native"})
    assert settings.state_dir == directory.resolve() / ".sandbox"
    assert (directory / ".gitignore").read_text() == ".sandbox/\n"
    compile((directory / "tests" / "test_pipeline.py").read_text(), "test_pipeline.py", "exec")


def test_run_again_it_changes_nothing_and_keeps_what_the_team_changed(tmp_path):
    init(tmp_path)
    (tmp_path / "ddl" / "postgres.sql").write_text("CREATE TABLE mine (id int PRIMARY KEY);\n")
    (tmp_path / ".gitignore").write_text("*.pyc\n.sandbox/\n")
    before = {path: path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()}
    said = init(tmp_path).stdout
    assert "nothing to do" in said and "kept: yours differs" in said
    assert {path: path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()} == before


def test_a_gitignore_of_the_teams_gains_the_state_directory_once(tmp_path):
    (tmp_path / ".gitignore").write_text("*.pyc")
    starter.init(tmp_path)
    starter.init(tmp_path)
    assert (tmp_path / ".gitignore").read_text() == "*.pyc\n.sandbox/\n"


def test_a_directory_name_becomes_a_name_every_service_accepts(tmp_path):
    assert starter.project_name(tmp_path / "2024 Sales.Pipeline!") == "p_2024_sales_pipeline"
    assert starter.project_name(tmp_path / "shop") == "shop"
