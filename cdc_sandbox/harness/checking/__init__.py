"""Checking silver: both readers (Spark and hudi-rs), the oracle's expected state and checks, their verdicts, and
SQL over the metastore."""
