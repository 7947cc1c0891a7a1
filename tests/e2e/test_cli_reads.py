"""`sandbox mutate --json` and `sandbox query` as a script reads them: the journal entry of a change, then silver
through hudi-rs (the default) and through Spark, the same rows either way, the table's own columns unless --meta,
and the commit timeline as JSON."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.e2e]


def sandbox_json(*args: str) -> list[dict]:
    done = subprocess.run([sys.executable, "-m", "cdc_sandbox", *args, "--json"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert not done.stderr, f"a command's output is its answer alone (Spark's log goes to the sandbox's):\n{done.stderr}"
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_a_change_made_and_read_back_through_the_cli(pipeline_factory, oracle_factory, mutator):
    oracle = oracle_factory(pipeline_factory(only=["category"]))  # a lake of the one table the test reads
    lake = oracle.pipeline.config.lake
    oracle.track(["category"])
    row = mutator.sample_row("category", random.Random(5))
    [entry] = sandbox_json("mutate", "update", "category", json.dumps({"catid": row["catid"]}),
                           json.dumps({"catname": "read back"}))
    assert (entry["kind"], entry["table"], entry["key"]) == ("update", "category", {"catid": row["catid"]})
    assert entry["position"] is not None
    commit = oracle.round("changed through the CLI")["category"].commit

    quick = sandbox_json("query", "category", "--lake", lake, "--limit", "1000000")
    assert {r["catid"]: r["catname"] for r in quick if r["__deleted"] != "true"}[row["catid"]] == "read back"
    assert not [c for c in quick[0] if c.startswith("_hoodie_")], "the table's own columns without --meta"
    spark = sandbox_json("query", "category", "--lake", lake, "--limit", "1000000", "--engine", "spark")
    assert sorted(quick, key=lambda r: r["catid"]) == sorted(spark, key=lambda r: r["catid"])

    [meta] = sandbox_json("query", "category", "--lake", lake, "--meta", "--as-of", commit.instant, "--limit", "1")
    assert "_hoodie_commit_time" in meta and "_source_position" in meta
    timeline = sandbox_json("query", "category", "--lake", lake, "--timeline")
    assert timeline[-1]["instant"] == commit.instant
