"""A project's DDL file run as the engine's own client runs it: `psql` for Postgres (its meta-commands, SET lines,
dollar quoting, one transaction for the whole file), `mariadb` for MariaDB and MySQL (DELIMITER, triggers,
executable `/*!… */` comments). A schema dump goes in as `pg_dump --schema-only` or `mysqldump --no-data` wrote it.

What a dump needs of the server it came from, the sandbox supplies, and says so:
- roles that own or are granted objects (`OWNER TO`, `GRANT … TO`) and do not exist here are created, without login;
- a schema the dump creates that the sandbox made first (its namespace, empty but for the sandbox's probe table) is
  left to the dump: the sandbox's copy is dropped in the dump's own transaction, and made capturable again after.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from psycopg2 import sql as pgsql

from cdc_sandbox.config import Settings, Source
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.sql_text import statements, without_client_commands
from cdc_sandbox.stack.credentials import login
from cdc_sandbox.stack.databases import connection

# pg_dump 17.6 and later fence a dump between `\restrict KEY` and `\unrestrict KEY`, which guard a restore against
# meta-commands a malicious server slipped into it; psql before 17.6 refuses them. The sandbox's own server wrote
# nothing here, so the fence lines are blanked (the file's other lines keep their numbers).
RESTRICT_FENCE = re.compile(r"^\\(un)?restrict\b.*$", re.MULTILINE)
MISSING_ROLE = re.compile(r'role "([^"]+)" does not exist')
SCHEMA_EXISTS = re.compile(r'schema "([^"]+)" already exists')
PSQL_ERROR = re.compile(r"^psql:[^\n]*?:(\d+): (?:ERROR|FATAL|error):\s*(.*)$", re.MULTILINE)
MARIADB_ERROR = re.compile(r"^ERROR (\d+)(?: \([0-9A-Z]+\))? at line (\d+)(?: in file: '[^']*')?: (.*)$",
                           re.MULTILINE)
PROBE_TABLE = "cdc_probe"
MOST_ROLES = 100  # a dump naming more missing roles than this is refused rather than retried for ever


@dataclass
class Outcome:
    """What running the file took beyond the file itself."""

    roles_created: list[str] = field(default_factory=list)
    schemas_taken_over: list[str] = field(default_factory=list)


class Refused(Exception):
    """The server refused a statement of the file: its line and the server's message."""

    def __init__(self, line: int | None, message: str):
        super().__init__(message)
        self.line, self.message = line, message


def client(name: str, package: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise SandboxError(f"the {name} client is not installed; a project's DDL file runs through it",
                           f"install {package} (`sandbox up` installs it with the server on Debian/Ubuntu)")
    return found


def run_postgres(settings: Settings, source: Source) -> Outcome:
    """The file in one transaction: all of it or nothing. A missing role or a schema the sandbox made first is
    supplied and the file runs again from its start."""
    outcome = Outcome()
    text = RESTRICT_FENCE.sub("", source.ddl.read_text())
    with tempfile.NamedTemporaryFile("w", suffix=".sql") as copy:
        copy.write(text)
        copy.flush()
        while True:
            try:
                _psql(settings, source, Path(copy.name), outcome.schemas_taken_over)
                return outcome
            except Refused as refused:
                if not _supplied(settings, source, refused, outcome):
                    raise Refused(statement_start(text, refused.line), refused.message) from None


def statement_start(text: str, line: int | None) -> int | None:
    """The line the statement that ends on `line` begins on (psql names the line it read the statement's end on)."""
    if line is None:
        return None
    starts = [start for start, _ in statements(without_client_commands(text)) if start <= line]
    return starts[-1] if starts else line


def _supplied(settings: Settings, source: Source, refused: Refused, outcome: Outcome) -> bool:
    """Whether what the refusal asks for was supplied (so the file may run again)."""
    role = MISSING_ROLE.search(refused.message)
    if role and role.group(1) not in outcome.roles_created and len(outcome.roles_created) < MOST_ROLES:
        _create_role(settings, source, role.group(1))
        outcome.roles_created.append(role.group(1))
        return True
    schema = SCHEMA_EXISTS.search(refused.message)
    if schema and schema.group(1) not in outcome.schemas_taken_over and _only_the_probe_in(settings, source,
                                                                                          schema.group(1)):
        outcome.schemas_taken_over.append(schema.group(1))
        return True
    return False


def _psql(settings: Settings, source: Source, path: Path, taken_over: list[str]) -> None:
    endpoint, admin = settings.endpoint("postgres"), login(settings, "postgres", "admin")
    env = {"PGHOST": endpoint.host, "PGPORT": str(endpoint.port), "PGUSER": admin.user, "PGPASSWORD": admin.password,
           "PGDATABASE": source.database, "PGCLIENTENCODING": "UTF8", "PATH": "/usr/bin:/bin"}
    drops = [f'DROP TABLE IF EXISTS "{schema}".{PROBE_TABLE}; DROP SCHEMA "{schema}"' for schema in taken_over]
    command = [client("psql", "postgresql-client"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "--single-transaction",
               *[arg for drop in drops for arg in ("-c", drop)], "-f", str(path)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode == 0:
        return
    said = done.stderr.strip()
    error = PSQL_ERROR.search(said)
    if error:
        raise Refused(int(error.group(1)), error.group(2).strip())
    raise Refused(None, said.splitlines()[0] if said else f"psql exited with {done.returncode}")


def _create_role(settings: Settings, source: Source, role: str) -> None:
    with connection(settings, "postgres", source.database) as conn:
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute(pgsql.SQL("CREATE ROLE {} NOLOGIN").format(pgsql.Identifier(role)))


def _only_the_probe_in(settings: Settings, source: Source, schema: str) -> bool:
    """A schema of the source's that holds nothing but the sandbox's probe table: the sandbox made it."""
    if schema not in source.namespaces:
        return False
    with connection(settings, "postgres", source.database) as conn, conn.cursor() as cur:
        cur.execute("SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'v', 'm', 'f')", (schema,))
        held = {row[0] for row in cur.fetchall()}
        conn.commit()
    return held <= {PROBE_TABLE}


def run_mariadb(settings: Settings, source: Source) -> None:
    """The file through the `mariadb` client, statement after statement (MariaDB commits each DDL on its own)."""
    endpoint, admin = settings.endpoint("mysql"), login(settings, "mysql", "admin")
    command = [client("mariadb", "mariadb-client"), "--no-defaults", "--batch", "--silent", "--no-auto-rehash",
               f"--host={endpoint.host}", f"--port={endpoint.port}", f"--user={admin.user}", "--protocol=TCP",
               "--default-character-set=utf8mb4", source.database]
    with source.ddl.open("rb") as text:
        done = subprocess.run(command, stdin=text, env={"MYSQL_PWD": admin.password or "", "PATH": "/usr/bin:/bin"},
                              capture_output=True, timeout=600)
    if done.returncode == 0:
        return
    said = done.stderr.decode(errors="replace").strip()
    error = MARIADB_ERROR.search(said)
    if error:
        raise Refused(int(error.group(2)), error.group(3).strip())
    raise Refused(None, said.splitlines()[0] if said else f"mariadb exited with {done.returncode}")
