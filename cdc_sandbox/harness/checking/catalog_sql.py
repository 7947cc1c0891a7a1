"""`sandbox sql`: Spark SQL over the silver tables the jobs sync into the Hive Metastore, from a process of its own.

The session reads the catalog from the metastore, so it sees what any job registered there (database
`tickit_cdc_hudi` by default), with Hudi's SQL: `TIMESTAMP AS OF`, and table-valued functions such as
`hudi_table_changes` and `hudi_query_timeline`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from cdc_sandbox.config import Settings
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.harness.running import sandbox_job
from cdc_sandbox.stack.services.metastore import require_metastore, thrift_uri

# Spark's own log (a failed statement's stack traces among it) goes to a file: the shell prints each error's cause in
# one line.
LOG4J2 = """\
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{yy/MM/dd HH:mm:ss}} %p %c: %m%n
rootLogger.level = warn
rootLogger.appenderRef.file.ref = file
"""


@dataclass
class Result:
    columns: list[str]
    rows: list[tuple]
    truncated: bool  # more rows than were fetched


def catalog_session(settings: Settings, database: str | None = None):
    """A Spark session on the sandbox's metastore, in `database` (default: the jobs' silver database)."""
    require_metastore(settings, "start it with `sandbox up` (see `sandbox status`)")
    config = sandbox_job.job_config(settings, metastore_uri=thrift_uri(settings))
    spark = command_session(settings, config)
    database = database or config.catalog_database
    if not spark.catalog.databaseExists(database):
        raise SandboxError(f"the metastore has no database {database}",
                           "`sandbox job run` writes silver and syncs its tables into tickit_cdc_hudi")
    spark.catalog.setCurrentDatabase(database)
    return spark


def command_session(settings: Settings, config):
    """A Spark session for a CLI command: its log goes to the sandbox's `sql` log, so the command prints its answer
    alone."""
    from cdc_sandbox.harness.running.pipeline import spark_for

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # else Spark warns that the host name is a loopback
    return spark_for(settings, config, java_options=f"-Dlog4j2.configurationFile={spark_log_config(settings)}")


def spark_log_config(settings: Settings) -> str:
    """A log4j2 configuration sending the session's log to the sandbox's `sql` log; its path."""
    log = settings.log_file("sql")
    log.parent.mkdir(parents=True, exist_ok=True)
    config = log.with_name("sql-log4j2.properties")
    config.write_text(LOG4J2.format(log=log))
    return str(config)


def run(spark, statement: str, limit: int) -> Result:
    """Run one statement; fetch at most `limit` rows of its result."""
    frame = spark.sql(statement)
    rows = [tuple(row) for row in frame.limit(limit + 1).collect()]
    return Result(frame.columns, rows[:limit], len(rows) > limit)


def as_json(statement: str, result: Result | None = None, error: str | None = None) -> str:
    """One line per statement, for scripts: its columns and rows, or its error."""
    if result is None:
        return json.dumps({"statement": statement, "error": error})
    return json.dumps({"statement": statement, "columns": result.columns, "rows": [list(row) for row in result.rows],
                       "truncated": result.truncated}, default=str)


def statements(lines: Iterable[str]) -> Iterator[str]:
    """Statements from lines as typed: each ends with a `;` at the end of a line."""
    pending: list[str] = []
    for line in lines:
        line = line.rstrip("\n")
        pending.append(line)
        if line.rstrip().endswith(";"):
            text = "\n".join(pending).strip().rstrip(";").strip()
            pending = []
            if text:
                yield text
    if "".join(pending).strip():
        yield "\n".join(pending).strip()
