"""The job's transforms on small DataFrames in a local Spark, without Kafka, the registry or S3: a key's changes in
one micro-batch reduce to the last by source position (not by Kafka offset), and a message that does not decode is
set aside with its coordinates and the reason, never dropped."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# In a process of its own: PySpark fixes the JVM's classpath at the first session, and the end-to-end suites in this
# process need one started with the job's jars.
TRANSFORMS = """
import json
from pyspark.sql import SparkSession
from spark_jobs.cdc_hudi_job import latest_per_key
from spark_jobs.decode import decode
from spark_jobs.job_config import TableSpec

spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
spec = TableSpec(topic="tickit.ems.category", table="category", key=("catid",), position="lsn")
changes = spark.createDataFrame(
    [(1, "first", 100, 0), (1, "last", 300, 1), (1, "middle", 200, 2),  # a later change at a lower offset
     (2, "a", 500, 3), (2, "b", 500, 4)],                                  # one position: the later offset wins
    "catid int, catname string, _source_position long, offset long")
kept = {row.catid: row.catname for row in latest_per_key(changes, spec).collect()}

class NoSchemas:
    def get(self, global_id):
        return None

unframed = bytes([1]) + bytes(8) + b"body"
unknown = bytes([0]) + (77).to_bytes(8, "big") + b"body"
batch = spark.createDataFrame(
    [(spec.topic, 0, 10, None, unframed), (spec.topic, 0, 11, None, unknown), (spec.topic, 0, 12, None, b"\\x00")],
    "topic string, partition int, offset long, timestamp timestamp, value binary")
decoded = decode(batch, [spec], NoSchemas(), pairs=[(spec.topic, 77)])
quarantined = sorted((row.offset, row.reason) for row in decoded.quarantine.collect())
print(json.dumps({"kept": kept, "quarantined": quarantined, "tables": sorted(decoded.tables)}))
spark.stop()
"""


def run_transforms() -> dict:
    run = subprocess.run([sys.executable, "-c", TRANSFORMS], capture_output=True, text=True,
                         cwd=Path(__file__).parents[2])
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_in_batch_reduction_and_quarantine():
    result = run_transforms()
    assert result["kept"] == {"1": "last", "2": "b"}, "highest source position, then highest Kafka offset"
    reasons = dict(result["quarantined"])
    assert sorted(reasons) == [10, 11, 12], "every undecodable message is kept with its offset"
    assert reasons[10].startswith("not Apicurio-framed Avro") and reasons[12].startswith("not Apicurio-framed Avro")
    assert reasons[11] == "schema id 77 is not in the registry"
    assert result["tables"] == [], "nothing decoded, nothing written"
