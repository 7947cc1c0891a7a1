"""PostgreSQL: a private cluster in `<state>/data/postgres` with logical decoding for Debezium (pgoutput)."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

from psycopg2 import sql

from cdc_sandbox.config import PACKAGE_DIR
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.stack import declarations, process
from cdc_sandbox.stack.credentials import login
from cdc_sandbox.stack.databases import connection
from cdc_sandbox.stack.services.base import NativeService

SQL_DIR = PACKAGE_DIR / "fixtures" / "sql" / "postgres"


def server_bin_dir() -> Path:
    """The directory of the newest installed PostgreSQL server binaries (Debian keeps them off PATH)."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=lambda p: int(p.split("/")[4]))
    if candidates:
        return Path(candidates[-1]).parent
    on_path = shutil.which("postgres")
    if on_path:
        return Path(on_path).parent
    raise SandboxError("the PostgreSQL server (postgres, initdb) is not installed",
                       "run `sandbox up` as root on Debian/Ubuntu to install it, or `apt-get install postgresql`")


class Postgres(NativeService):
    name = "postgres"
    start_timeout = 60

    def __init__(self, settings):
        super().__init__(settings)
        # The server refuses to run as root; the Debian package's `postgres` account runs it then.
        self.run_as = "postgres" if os.geteuid() == 0 else None
        source = settings.topology.sources.get("postgres")
        self.database = source.database if source else None  # None: the project captures nothing here
        self.schemas = source.namespaces if source else []
        self.publication = f"dbz_{self.database}"

    def prepare(self) -> None:
        if (self.data_dir / "PG_VERSION").exists():
            return
        admin = login(self.settings, "postgres", "admin")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=self.data_dir.parent, delete=False) as pwfile:
            pwfile.write(admin.password + "\n")
        try:
            self._give_to_server_user(self.data_dir, Path(pwfile.name))
            subprocess.run(
                [str(server_bin_dir() / "initdb"), "-D", str(self.data_dir), "-U", admin.user,
                 f"--pwfile={pwfile.name}", "--auth=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8"],
                check=True, capture_output=True, text=True, cwd="/", **process.run_as_kwargs(self.run_as),
            )
        except subprocess.CalledProcessError as exc:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            raise SandboxError(f"initdb failed: {exc.stderr.strip()}", "see the message above") from None
        finally:
            os.unlink(pwfile.name)

    def command(self) -> list[str]:
        settings = {
            "listen_addresses": self.endpoint.host,
            "port": self.endpoint.port,
            "unix_socket_directories": "",
            **declarations.POSTGRES_SERVER,
            "logging_collector": "off",
        }
        args = [str(server_bin_dir() / "postgres"), "-D", str(self.data_dir)]
        for key, value in settings.items():
            args += ["-c", f"{key}={value}"]
        return args

    def is_ready(self) -> bool:
        with connection(self.settings, "postgres", "postgres") as conn, conn.cursor() as cur:
            cur.execute("SELECT 1")
            return True

    def version(self) -> str:
        with connection(self.settings, "postgres", "postgres") as conn, conn.cursor() as cur:
            cur.execute("SHOW server_version")
            return cur.fetchone()[0].split()[0]

    def post_start(self) -> None:
        if self.database is None:
            return
        self._create_database()
        with connection(self.settings, "postgres") as conn:
            conn.autocommit = True
            with conn.cursor() as cur:
                self._create_schemas_and_capture_role(cur)
                for script in sorted(SQL_DIR.glob("*.sql")):
                    cur.execute(script.read_text().replace("{{namespace}}", self.schemas[0]))
                self._create_publication(cur)

    def _create_database(self) -> None:
        with connection(self.settings, "postgres", "postgres") as conn:
            conn.autocommit = True
            with conn.cursor() as cur:
                ensure_database(cur, self.database)

    def _create_schemas_and_capture_role(self, cur) -> None:
        """The Debezium role may replicate and read the captured schemas, nothing more."""
        dbz = login(self.settings, "postgres", "debezium")
        role = sql.Identifier(dbz.user)
        ensure_login(cur, dbz.user, dbz.password, "REPLICATION")
        for schema in self.schemas:
            name = sql.Identifier(schema)
            cur.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(name))
            cur.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(name, role))
            cur.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(name, role))
            cur.execute(sql.SQL("ALTER DEFAULT PRIVILEGES IN SCHEMA {} GRANT SELECT ON TABLES TO {}").format(name, role))

    def _create_publication(self, cur) -> None:
        """One publication per database covering the captured schemas, so tables created later are included."""
        publication = sql.Identifier(self.publication)
        cur.execute("SELECT 1 FROM pg_publication WHERE pubname = %s", (self.publication,))
        if cur.fetchone() is None:
            cur.execute(sql.SQL("CREATE PUBLICATION {} WITH (publish_via_partition_root = true)").format(publication))
        cur.execute("SELECT n.nspname FROM pg_publication_namespace pn JOIN pg_publication p ON p.oid = pn.pnpubid "
                    "JOIN pg_namespace n ON n.oid = pn.pnnspid WHERE p.pubname = %s", (self.publication,))
        covered = {row[0] for row in cur.fetchall()}
        for schema in self.schemas:
            if schema not in covered:
                cur.execute(sql.SQL("ALTER PUBLICATION {} ADD TABLES IN SCHEMA {}").format(
                    publication, sql.Identifier(schema)))

    def _give_to_server_user(self, *paths: Path) -> None:
        if self.run_as is None:
            return
        account = pwd.getpwnam(self.run_as)
        for path in paths:
            os.chown(path, account.pw_uid, account.pw_gid)
        self.data_dir.chmod(0o700)
        allow_traversal(self.data_dir.parent)


def ensure_login(cur, user: str, password: str, attributes: str = "") -> None:
    """Create the login role, or give an existing one this password and these attributes (idempotent)."""
    cur.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (user,))
    verb = "ALTER" if cur.fetchone() else "CREATE"
    cur.execute(sql.SQL(f"{verb} ROLE {{}} WITH LOGIN {attributes} PASSWORD %s").format(sql.Identifier(user)),
                (password,))


def ensure_database(cur, name: str, owner: str | None = None) -> None:
    """Create the database unless it exists (outside a transaction: `cur`'s connection is in autocommit)."""
    cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
    if cur.fetchone() is None:
        owned = sql.SQL(" OWNER {}").format(sql.Identifier(owner)) if owner else sql.SQL("")
        cur.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)) + owned)


def allow_traversal(directory: Path) -> None:
    """Let other accounts pass through (not list) the directories above the data directory.

    The server runs as `postgres` while the state directory belongs to root, possibly below a private directory
    (a `mktemp -d` checkout is 0700); without search permission on every ancestor it cannot reach its data.
    """
    for ancestor in [directory, *directory.parents]:
        mode = ancestor.stat().st_mode
        if not mode & stat.S_IXOTH:
            ancestor.chmod(mode | stat.S_IXOTH)
