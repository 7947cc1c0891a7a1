"""A Spark session with Hudi and, where configured, S3A pointed at the lake's endpoint."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdc_sandbox.spark_jobs.job_config import JobConfig

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Hudi sizes its spillable maps with JOL, which on first use starts two JVMs to probe for the serviceability agent
# and then warns that it cannot attach, which slows the first upsert in every process. Its estimate works without.
QUIET_JOL = "-Djol.skipHotspotSAAttach=true -Djol.skipDynamicAttach=true"
# The S3 client parses every listing with a SAX reader that it asks `XMLReaderFactory` for; without this property
# the factory searches every jar on the classpath for a provider, per response (1.5% of the driver's CPU, sampled).
SAX_DRIVER = "-Dorg.xml.sax.driver=com.sun.org.apache.xerces.internal.parsers.SAXParser"
# The throughput collector instead of G1: a driver on few cores loses less of its CPU to collection without G1's
# concurrent marking (docs/reference/job-settings.md).
PARALLEL_GC = "-XX:+UseParallelGC"
# Spark keeps the code it generates for a plan, compiled, in a cache of 100 by default. The harness's driver runs the
# job's upserts of seven tables and the oracle's reads of them for a whole session, more distinct plans than that:
# over the scenarios and the oracle suites Janino compiled 1,153-1,344 plans with 100 entries and 348-383 with 2,000,
# and each compiled plan is new classes, new code for the JIT compiler (docs/reference/job-settings.md).
CODEGEN_CACHE_ENTRIES = "2000"
# Spark compiles a stage into one class only while its rows have at most this many fields, nested ones counted
# (default 100). The job decodes a topic's messages into one record column per schema version, which a topic with a
# few versions of a dozen columns passes; above it every task generated its projection's code anew (a fifth of the
# executor's CPU in a backlog with 16 versions of `listing`, Java Flight Recorder). A stage whose code would be too
# large for the JVM still falls back to the generic path (`spark.sql.codegen.hugeMethodLimit`).
CODEGEN_MAX_FIELDS = "2000"


def driver_conf(config: JobConfig, java_options: str = "") -> dict[str, str]:
    """Settings that count only when the driver JVM starts: spark-submit's `--conf`, or PySpark's launcher."""
    conf = {"spark.driver.extraJavaOptions": " ".join(filter(None, [QUIET_JOL, SAX_DRIVER, PARALLEL_GC, java_options]))}
    if config.jars:
        # In local mode the driver runs the tasks: its classpath serves them, and the jars are not copied into a
        # temporary directory (about 400 MB per process) for a second class loader, as `spark.jars` would.
        conf["spark.driver.extraClassPath"] = ":".join(config.jars)
    return conf


def session_conf(config: JobConfig, java_options: str = "") -> dict[str, str]:
    """Every Spark setting the job's session needs: Hudi, S3A pointed at the lake's endpoint, the jars."""
    conf = {
        "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
        "spark.kryo.registrator": "org.apache.spark.HoodieSparkKryoRegistrar",
        "spark.sql.extensions": "org.apache.spark.sql.hudi.HoodieSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.hudi.catalog.HoodieCatalog",
        "spark.sql.session.timeZone": config.session_zone,
        # Dates and times are proleptic Gregorian from the source to the lake: written so (Spark's default refuses to
        # write a date before 1582 or a time before 1900, which its 2.x readers took in another calendar), and read so
        # from files of Hudi's Avro writer, which carry no Spark version to tell Spark their calendar.
        "spark.sql.parquet.datetimeRebaseModeInWrite": "CORRECTED",
        "spark.sql.parquet.datetimeRebaseModeInRead": "CORRECTED",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.codegen.cache.maxEntries": CODEGEN_CACHE_ENTRIES,
        "spark.sql.codegen.maxFields": CODEGEN_MAX_FIELDS,
        "spark.sql.sources.partitionOverwriteMode": "dynamic",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        # S3A leaves the empty "directory" marker objects in place instead of deleting every parent's marker after
        # each file it writes (a bulk delete per file): Hadoop 3.3.1 and later read either layout.
        "spark.hadoop.fs.s3a.directory.marker.retention": "keep",
        # Arrays as Parquet's three-level lists: parquet-avro's old two-level ones cannot hold a NULL element, and
        # Hudi's writer then fails the batch on a Postgres array such as '{a,NULL}'.
        "spark.hadoop.parquet.avro.write-old-list-structure": "false",
        **driver_conf(config, java_options),
    }
    if config.s3_endpoint:
        conf |= {"spark.hadoop.fs.s3a.endpoint": config.s3_endpoint,
                 "spark.hadoop.fs.s3a.path.style.access": str(config.s3_path_style).lower(),
                 "spark.hadoop.fs.s3a.connection.ssl.enabled": str(config.s3_endpoint.startswith("https")).lower(),
                 "spark.hadoop.fs.s3a.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem"}
    if config.metastore_uri:
        conf |= {"spark.sql.catalogImplementation": "hive", "spark.hadoop.hive.metastore.uris": config.metastore_uri}
    if config.s3_access_key:
        conf |= {"spark.hadoop.fs.s3a.access.key": config.s3_access_key,
                 "spark.hadoop.fs.s3a.secret.key": config.s3_secret_key or ""}
    return conf | config.extra_spark_conf


def spark_session(config: JobConfig, app_name: str = "tickit-cdc-hudi", java_options: str = "") -> SparkSession:
    from pyspark.sql import SparkSession  # here: a command that makes no session starts without loading PySpark

    builder = SparkSession.builder.appName(app_name)
    for key, value in session_conf(config, java_options).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
