"""MariaDB, the MySQL-compatible server run natively: binlog in ROW format with full row images for Debezium."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pymysql

from sandbox.config import PROJECT_ROOT
from sandbox.credentials import login
from sandbox.errors import SandboxError
from sandbox.services.base import NativeService

SQL_DIR = PROJECT_ROOT / "fixtures" / "sql" / "mysql"
SERVER_ID = 1
CAPTURE_GRANTS = "SELECT, RELOAD, SHOW DATABASES, LOCK TABLES, REPLICATION SLAVE, BINLOG MONITOR"


def server_binary(name: str) -> str:
    found = shutil.which(name) or (f"/usr/sbin/{name}" if Path(f"/usr/sbin/{name}").exists() else None)
    if not found:
        raise SandboxError(f"the MariaDB server ({name}) is not installed",
                           "run `make up` as root on Debian/Ubuntu to install it, or `apt-get install mariadb-server`")
    return found


class MariaDB(NativeService):
    name = "mysql"
    start_timeout = 60

    def __init__(self, settings):
        super().__init__(settings)
        self.database = settings.topology.sources["mysql"].database
        self.socket = settings.state_dir / "run" / "mysql.sock"

    def prepare(self) -> None:
        if (self.data_dir / "mysql").is_dir():
            return
        self.data_dir.mkdir(parents=True, exist_ok=True)
        command = [server_binary("mariadb-install-db"), "--no-defaults", f"--datadir={self.data_dir}",
                   "--auth-root-authentication-method=normal", "--skip-test-db"]
        if os.geteuid() == 0:
            command.append("--user=root")
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            raise SandboxError(f"mariadb-install-db failed: {result.stderr.strip()[-800:]}", "see the message above")

    def command(self) -> list[str]:
        self.socket.parent.mkdir(parents=True, exist_ok=True)
        args = [
            server_binary("mariadbd"), "--no-defaults",
            f"--datadir={self.data_dir}",
            f"--bind-address={self.endpoint.host}",
            f"--port={self.endpoint.port}",
            f"--socket={self.socket}",
            f"--pid-file={self.settings.state_dir / 'run' / 'mariadbd.pid'}",
            f"--log-bin={self.data_dir / 'binlog'}",
            "--binlog-format=ROW",
            "--binlog-row-image=FULL",
            f"--server-id={SERVER_ID}",
            "--skip-name-resolve",
            "--local-infile=1",
            "--character-set-server=utf8mb4",
            "--collation-server=utf8mb4_unicode_ci",
            "--innodb-buffer-pool-size=256M",
            "--expire-logs-days=7",
        ]
        if os.geteuid() == 0:
            args.append("--user=root")
        return args

    def connect(self, database: str | None = None, role: str = "admin", **kwargs):
        who = login(self.settings, "mysql", role)
        return pymysql.connect(host=self.endpoint.host, port=self.endpoint.port, user=who.user, password=who.password,
                               database=database, connect_timeout=3, autocommit=True, **kwargs)

    def _connect_as_root(self):
        """Before the sandbox's users exist, only the local root account (socket, no password) can log in."""
        return pymysql.connect(unix_socket=str(self.socket), user="root", connect_timeout=3, autocommit=True)

    def is_ready(self) -> bool:
        conn = self.connect() if self.external else self._connect_as_root()
        with conn, conn.cursor() as cur:
            cur.execute("SELECT 1")
            return True

    def version(self) -> str:
        with self.connect() as conn, conn.cursor() as cur:
            cur.execute("SELECT VERSION()")
            return cur.fetchone()[0].split("-0+")[0]  # drop the distribution's build suffix

    def post_start(self) -> None:
        conn = self.connect() if self.external else self._connect_as_root()
        with conn, conn.cursor() as cur:
            if not self.external:
                self._ensure_users(cur)
            cur.execute(f"CREATE DATABASE IF NOT EXISTS `{self.database}`")
            for script in sorted(SQL_DIR.glob("*.sql")):
                for statement in split_statements(script.read_text()):
                    cur.execute(statement)

    def _ensure_users(self, cur) -> None:
        admin = login(self.settings, "mysql", "admin")
        dbz = login(self.settings, "mysql", "debezium")
        for who in (admin, dbz):
            cur.execute("CREATE USER IF NOT EXISTS %s@'%%' IDENTIFIED BY %s", (who.user, who.password))
            cur.execute("ALTER USER %s@'%%' IDENTIFIED BY %s", (who.user, who.password))
        cur.execute("GRANT ALL PRIVILEGES ON *.* TO %s@'%%' WITH GRANT OPTION", (admin.user,))
        cur.execute(f"GRANT {CAPTURE_GRANTS} ON *.* TO %s@'%%'", (dbz.user,))


def split_statements(script: str) -> list[str]:
    """Split a plain DDL script on `;` (the fixtures hold no procedures), dropping `--` comment lines."""
    lines = [line for line in script.splitlines() if not line.lstrip().startswith("--")]
    return [stmt.strip() for stmt in "\n".join(lines).split(";") if stmt.strip()]
