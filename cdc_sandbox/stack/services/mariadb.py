"""MariaDB, the MySQL-compatible server run natively: binlog in ROW format with full row images for Debezium.

Locked down for a shared machine: the administrative account is `root@localhost` (or, when the sandbox does not run
as root, an account named after its OS user) through the unix_socket plugin alone, so only that OS account logs in
as it, over a socket in a directory only it can enter; no account logs in without a password over TCP. The
sandbox's own logins (credentials file, 0600) are the only ones that work over TCP.
"""

from __future__ import annotations

import getpass
import hashlib
import os
import pwd
import shutil
import subprocess
import tempfile
from contextlib import closing
from pathlib import Path

import pymysql

from cdc_sandbox.config import PACKAGE_DIR
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.stack import declarations
from cdc_sandbox.stack.credentials import login
from cdc_sandbox.stack.databases import connection, open_connection
from cdc_sandbox.sql_text import statements
from cdc_sandbox.stack.services.base import NativeService
from cdc_sandbox.stack.services.postgres import allow_traversal

SQL_DIR = PACKAGE_DIR / "fixtures" / "sql" / "mysql"
ACCESS_DENIED = (1045, 1698)  # no such account; the socket's OS user is not the account's
CAPTURE_GRANTS = "SELECT, RELOAD, SHOW DATABASES, LOCK TABLES, REPLICATION SLAVE, BINLOG MONITOR"


def server_binary(name: str) -> str:
    found = shutil.which(name) or (f"/usr/sbin/{name}" if Path(f"/usr/sbin/{name}").exists() else None)
    if not found:
        raise SandboxError(f"the MariaDB server ({name}) is not installed",
                           "run `sandbox up` as root on Debian/Ubuntu to install it, or `apt-get install mariadb-server`")
    return found


class MariaDB(NativeService):
    name = "mysql"
    start_timeout = 60

    def __init__(self, settings):
        super().__init__(settings)
        source = settings.topology.sources.get("mysql")
        self.database = source.database if source else None  # None: the project captures nothing here
        self.socket = socket_dir(settings.state_dir) / "mysql.sock"

    @property
    def run_as(self) -> str | None:
        """Run as root, the server drops to the `mysql` account of the distribution's package when it has one.
        Looked up at each use: on a fresh machine `up` installs the package, and so the account, after this object
        is made."""
        return server_account() if os.geteuid() == 0 else None

    def prepare(self) -> None:
        if (self.data_dir / "mysql").is_dir():
            return
        self.data_dir.mkdir(parents=True, exist_ok=True)
        command = [server_binary("mariadb-install-db"), "--no-defaults", f"--datadir={self.data_dir}",
                   "--auth-root-authentication-method=socket", f"--auth-root-socket-user={socket_user()}",
                   "--skip-test-db"]
        if os.geteuid() == 0:
            command.append(f"--user={self.run_as or 'root'}")
        self._give_to_server_account(self.data_dir)
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            raise SandboxError(f"mariadb-install-db failed: {result.stderr.strip()[-800:]}", "see the message above")

    def command(self) -> list[str]:
        self.socket.parent.mkdir(parents=True, exist_ok=True)
        self.socket.parent.chmod(0o700)  # the socket itself is world-writable: its directory guards it
        self.data_dir.chmod(0o700)
        # What a server run as root wrote before (its pid file, its data directory) passes to the account too.
        self._give_to_server_account(self.socket.parent, recursive=True)
        self._give_to_server_account(self.data_dir, recursive=True)
        args = [
            server_binary("mariadbd"), "--no-defaults",
            f"--datadir={self.data_dir}",
            f"--bind-address={self.endpoint.host}",
            f"--port={self.endpoint.port}",
            f"--socket={self.socket}",
            f"--pid-file={self.socket.parent / 'mariadbd.pid'}",
            f"--log-bin={self.data_dir / 'binlog'}",
            *declarations.MYSQL_SERVER_OPTIONS,
            f"--expire-logs-days={declarations.BINLOG_RETENTION_DAYS}",
        ]
        if os.geteuid() == 0:
            args.append(f"--user={self.run_as or 'root'}")
        return args

    def _give_to_server_account(self, path: Path, recursive: bool = False) -> None:
        """Hand the path to the account the server runs as, and let it reach the path through its parents."""
        if self.run_as is None:
            return
        account = pwd.getpwnam(self.run_as)
        for item in [path, *(path.rglob("*") if recursive else [])]:
            if item.lstat().st_uid != account.pw_uid:
                os.chown(item, account.pw_uid, account.pw_gid, follow_symlinks=False)
        allow_traversal(path.parent)

    def _connect_as_root(self):
        """The administrative account: through the socket, as the OS account the sandbox runs as (or root, in a
        data directory from before the lockdown, which `post_start` then locks down)."""
        try:
            return self._connect_by_socket(socket_user())
        except pymysql.err.OperationalError as exc:
            if socket_user() == "root" or exc.args[0] not in ACCESS_DENIED:
                raise
            return self._connect_by_socket("root")

    def _connect_by_socket(self, user: str):
        return pymysql.connect(unix_socket=str(self.socket), user=user, connect_timeout=3, autocommit=True)

    def _administer(self):
        """A connection that may create accounts and databases: the sandbox's admin login on an external server,
        the socket account on its own."""
        return open_connection(self.settings, "mysql") if self.external else self._connect_as_root()

    def is_ready(self) -> bool:
        with closing(self._administer()) as conn, conn.cursor() as cur:
            cur.execute("SELECT 1")
            return True

    def version(self) -> str:
        with connection(self.settings, "mysql") as conn, conn.cursor() as cur:
            cur.execute("SELECT VERSION()")
            return cur.fetchone()[0].split("-0+")[0]  # drop the distribution's build suffix

    def post_start(self) -> None:
        with closing(self._administer()) as conn, conn.cursor() as cur:
            if not self.external:
                self._lock_down_accounts(cur)
                self._ensure_users(cur)
            if self.database:
                create_database_and_fixtures(cur, self.database)

    def _lock_down_accounts(self, cur) -> None:
        """What an older sandbox's data directory still has: password-less root over TCP, anonymous accounts."""
        cur.execute("SELECT user, host FROM mysql.user WHERE (user IN ('root', %s) AND host <> 'localhost') "
                    "OR user = ''", (socket_user(),))
        for user, host in cur.fetchall():
            cur.execute("DROP USER %s@%s", (user, host))
        for account in dict.fromkeys(["root", socket_user()]):
            cur.execute("CREATE USER IF NOT EXISTS %s@'localhost' IDENTIFIED VIA unix_socket", (account,))
            cur.execute("ALTER USER %s@'localhost' IDENTIFIED VIA unix_socket", (account,))
            cur.execute("GRANT ALL PRIVILEGES ON *.* TO %s@'localhost' WITH GRANT OPTION", (account,))

    def _ensure_users(self, cur) -> None:
        admin = login(self.settings, "mysql", "admin")
        dbz = login(self.settings, "mysql", "debezium")
        for who in (admin, dbz):
            cur.execute("CREATE USER IF NOT EXISTS %s@'%%' IDENTIFIED BY %s", (who.user, who.password))
            cur.execute("ALTER USER %s@'%%' IDENTIFIED BY %s", (who.user, who.password))
        cur.execute("GRANT ALL PRIVILEGES ON *.* TO %s@'%%' WITH GRANT OPTION", (admin.user,))
        cur.execute(f"GRANT {CAPTURE_GRANTS} ON *.* TO %s@'%%'", (dbz.user,))


def create_database_and_fixtures(cur, database: str) -> None:
    """The source database and the fixtures' tables (the probe table), on any MariaDB or MySQL."""
    cur.execute(f"CREATE DATABASE IF NOT EXISTS `{database}`")
    for script in sorted(SQL_DIR.glob("*.sql")):
        for _, statement in statements(script.read_text().replace("{{namespace}}", database)):
            cur.execute(statement)


def socket_dir(state_dir: Path) -> Path:
    """A private directory for the server's socket, named after the state directory: in the runtime directory
    rather than the state directory, because a socket's path may not exceed 107 bytes."""
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(base) / f"cdc-sandbox-{hashlib.sha256(str(state_dir).encode()).hexdigest()[:12]}"


def server_account() -> str | None:
    """The OS account MariaDB's package made for the server (None where there is none: it then runs as root)."""
    try:
        return pwd.getpwnam("mysql").pw_name
    except KeyError:
        return None


def socket_user() -> str:
    """The MariaDB account the sandbox administers the server with: the OS account it runs as."""
    return "root" if os.geteuid() == 0 else getpass.getuser()
