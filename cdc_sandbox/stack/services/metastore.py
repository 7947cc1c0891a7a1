"""The Hive Metastore (standalone server, Thrift), keeping its catalog in a database of the sandbox's Postgres.

The jobs sync their silver tables into it (Hudi's Hive sync, database `tickit_cdc_hudi`), and `sandbox sql` reads
them through it from any process. Its tables point at the lake on S3, so it gets the same S3A settings as the job:
the server checks a new table's location.
"""

from __future__ import annotations

import socket
from pathlib import Path
from xml.sax.saxutils import escape

from cdc_sandbox.config import Settings
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.stack import declarations, jvm
from cdc_sandbox.stack.credentials import login
from cdc_sandbox.stack.databases import connection
from cdc_sandbox.stack.services.base import JvmService
from cdc_sandbox.stack.services.localstack import ACCESS_KEY, SECRET_KEY
from cdc_sandbox.stack.services.postgres import ensure_database, ensure_login

DATABASE = "hive_metastore"
# Hive's server (`org.apache.hadoop.hive.metastore.HiveMetaStore`) started on one address: 3.1 listens on every
# interface and has no setting for it (cdc_sandbox/stack/jvm/metastore/src).
SERVER_CLASS = "dev.cdcsandbox.metastore.LoopbackMetaStore"


def thrift_uri(settings: Settings) -> str:
    return f"thrift://{settings.endpoint('metastore').address}"


def accepts_connections(settings: Settings) -> None:
    """Raises OSError unless the metastore's port accepts a connection (it opens once its catalog store is set up)."""
    endpoint = settings.endpoint("metastore")
    socket.create_connection((endpoint.host, endpoint.port), timeout=3).close()


def require_metastore(settings: Settings, what_to_do: str) -> None:
    try:
        accepts_connections(settings)
    except OSError as exc:
        raise SandboxError(f"the metastore at {settings.endpoint('metastore').address} does not answer ({exc})",
                           what_to_do) from None


def site_properties(settings: Settings, port: int, jdbc_url: str, s3_endpoint: str) -> dict[str, str]:
    """The server's `metastore-site.xml`, for either backend (compose passes its container's port and addresses)."""
    who = login(settings, "postgres", "metastore")
    return {
        "metastore.thrift.port": str(port),
        "javax.jdo.option.ConnectionURL": jdbc_url,
        "javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
        "javax.jdo.option.ConnectionUserName": who.user,
        "javax.jdo.option.ConnectionPassword": who.password,
        # The catalog's tables come from the release's schema script (`create_database`), and the server checks
        # their version; DataNucleus's own creation, table by table on first use, left some missing.
        "datanucleus.schema.autoCreateAll": "false",
        "metastore.schema.verification": "true",
        # The defaults name classes that live in Hive's query engine, which the standalone server does not ship.
        "metastore.expression.proxy": "org.apache.hadoop.hive.metastore.DefaultPartitionExpressionProxy",
        "metastore.task.threads.always": "org.apache.hadoop.hive.metastore.events.EventCleanerTask",
        "metastore.warehouse.dir": f"s3a://{settings.topology.lake_bucket}/warehouse",
        "fs.s3a.endpoint": s3_endpoint,
        "fs.s3a.path.style.access": "true",
        "fs.s3a.connection.ssl.enabled": "false",
        "fs.s3a.access.key": ACCESS_KEY,
        "fs.s3a.secret.key": SECRET_KEY,
    }


def write_site(conf_dir: Path, properties: dict[str, str]) -> None:
    """`<conf_dir>/metastore-site.xml`, private: it holds the database password."""
    conf_dir.mkdir(parents=True, exist_ok=True)
    body = "".join(f"  <property><name>{escape(name)}</name><value>{escape(value)}</value></property>\n"
                   for name, value in properties.items())
    site = conf_dir / "metastore-site.xml"
    site.touch(mode=0o600)
    site.chmod(0o600)
    site.write_text(f"<?xml version=\"1.0\"?>\n<configuration>\n{body}</configuration>\n")


def jars_dir(settings: Settings) -> Path:
    found = jvm.artifacts_dir(settings) / "metastore"
    if not any(found.glob("hive-standalone-metastore-*.jar")):
        raise SandboxError(f"no Hive Metastore jar in {found}", "run `sandbox up`: it resolves the server through Maven")
    return found


def schema_dir(settings: Settings) -> Path:
    """Where the release's Postgres schema script lies (resolved through Maven with the server's jars)."""
    return jvm.artifacts_dir(settings) / "metastore-schema"


def schema_script(settings: Settings) -> Path:
    found = sorted(schema_dir(settings).rglob("hive-schema-*.postgres.sql"))
    if not found:
        raise SandboxError(f"no Hive Metastore schema script under {schema_dir(settings)}",
                           "run `sandbox up`: it resolves the metastore through Maven")
    return found[-1]


def create_database(settings: Settings) -> None:
    """The metastore's login, its database on the sandbox's Postgres, and the catalog's tables (idempotent)."""
    _create_login_and_database(settings)
    with connection(settings, "postgres", DATABASE, role="metastore") as conn, conn.cursor() as cur:
        cur.execute("SELECT to_regclass('public.\"VERSION\"') IS NOT NULL")
        if not cur.fetchone()[0]:
            cur.execute(schema_script(settings).read_text())
        cur.execute('SELECT count(*) FROM "VERSION"')
        if not cur.fetchone()[0]:
            raise SandboxError(f"database {DATABASE} holds a catalog without its schema version, which the "
                               "metastore refuses", f"drop database {DATABASE} (the catalog only: the lake stays), "
                               "then `sandbox up` creates it anew; `sandbox job run` syncs the tables again")
        conn.commit()


def _create_login_and_database(settings: Settings) -> None:
    who = login(settings, "postgres", "metastore")
    with connection(settings, "postgres", "postgres") as conn:
        conn.autocommit = True
        with conn.cursor() as cur:
            ensure_login(cur, who.user, who.password)
            ensure_database(cur, DATABASE, owner=who.user)


class Metastore(JvmService):
    name = "metastore"
    start_timeout = 120

    def prepare(self) -> None:
        create_database(self.settings)
        postgres = self.settings.endpoint("postgres")
        write_site(self.conf_dir, site_properties(self.settings, self.endpoint.port,
                                                  f"jdbc:postgresql://{postgres.address}/{DATABASE}",
                                                  self.settings.url("localstack")))

    def classpath(self) -> str:
        # The configuration's directory last: a class archive is refused beside a non-empty directory that precedes
        # a jar it holds classes of (no jar carries a metastore-site.xml of its own).
        return f"{jars_dir(self.settings)}/*:{self.conf_dir}"

    def command(self) -> list[str]:
        return self.java(*declarations.METASTORE_HEAP, *jvm.service_options()) + [SERVER_CLASS, self.endpoint.host,
                                                                            str(self.endpoint.port)]

    def is_ready(self) -> bool:
        accepts_connections(self.settings)
        return True

    def version(self) -> str:
        jar = next(jars_dir(self.settings).glob("hive-standalone-metastore-*.jar"))
        return jar.stem.removeprefix("hive-standalone-metastore-")
