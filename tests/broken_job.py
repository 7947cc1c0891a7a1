"""The built-in job with one of the broken variants (`tests/broken_variants.py`) applied, as a driver of its own:
`spark-submit tests/broken_job.py <variant> --config <file> (--once | --continuous)`. A variant whose bug shows only
on a cluster runs so, in local mode and on the sandbox's Spark cluster (`tests/e2e/test_spark_cluster.py`)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout, for `tests`

from cdc_sandbox.spark_jobs import cdc_hudi_job  # noqa: E402
from tests.broken_variants import break_job  # noqa: E402

if __name__ == "__main__":
    break_job(sys.argv[1])
    sys.exit(cdc_hudi_job.main(sys.argv[2:]))
