"""Scenario files: a production CDC bug as data — starting rows, a sequence of source changes with pipeline pauses,
job restarts and a skewed source clock, and what silver and time travel must show. The format is described in the
documentation (docs/guides/scenarios.md). A malformed file fails with its path, the line and the reason.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import itertools
import os
import random
import string
import zoneinfo
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import yaml

from cdc_sandbox import debezium_settings
from cdc_sandbox.config import ENGINES, INDEXES, PACKAGE_DIR, TOPOLOGY_FILE, Settings, load_topology, project_file
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.harness.checking.catches import ANY_COLUMN, CHECKS, Catch
from cdc_sandbox.harness.checking.oracle import Oracle
from cdc_sandbox.harness.running.broken_jobs import VARIANTS
from cdc_sandbox.harness.running.pipeline import BatchFailed
from cdc_sandbox.harness.checking.verdict import Finding, OracleMismatch
from cdc_sandbox.schema import BOOL, BYTES, DATE, DECIMAL, INTEGER_RANGES, JSON, NUMBER, STR, TIMESTAMP, TIMESTAMPTZ
from cdc_sandbox.schema import ARRAY, DOUBLE, FLOAT, INTERVAL, TIME, TIMETZ
from cdc_sandbox.schema import BIT_LAYOUTS, UUID, Column, Table
from cdc_sandbox.sources import signals, topics
from cdc_sandbox.sources.changes import ChangeReader, end_offsets
from cdc_sandbox.sources.mutations import LOGICAL_TYPES, Change, Mutator, added_column
from cdc_sandbox.sources.positions import BinlogMark, binlog_position, event_position
from cdc_sandbox.stack import catalog
from cdc_sandbox.stack.connectors import ConnectClient
from cdc_sandbox.tickit_data.schema import get_table
from cdc_sandbox.wait import wait_until

SHIPPED = PACKAGE_DIR / "fixtures" / "scenarios"  # the scenarios that come with the package, run on TICKIT
TOP_LEVEL = {"name", "description", "tables", "needs", "catches", "source", "replica_identity", "debezium", "silver", "job", "given",
             "steps"}
SILVER_SETTINGS = ("partition_by", "hive_style", "index")  # as a project file's `tables:` entries take them
REPLICA_IDENTITIES = ("default", "full")
RANDOM_TEXT_MAX = 10_000_000
JOB_OPTIONS = {"table_type", "hard_deletes", "continuous", "compaction_delta_commits", "session_zone"}
CHANGE_KINDS = {"insert", "update", "delete", "update_key", "add_column", "drop_column", "alter_column", "truncate"}
SCHEMA_CHANGES = {"add_column", "drop_column", "alter_column"}
ROW_CHANGES = CHANGE_KINDS - SCHEMA_CHANGES - {"truncate"}
# Steps besides ROW_CHANGES that send events for the job to read.
EVENTED_STEPS = {"truncate", "transaction", "grow_topic", "redeliver", "snapshot_table", "reset_connector"}
STEP_KINDS = CHANGE_KINDS | {"transaction", "check", "pause", "resume", "run", "restart", "source_clock",
                             "registry_outage", "grow_topic", "redeliver", "rewind_connector", "snapshot_table",
                             "reset_connector"}
BINLOG_ENGINES = ("mariadb", "mysql")
HEARTBEAT_MS = 200  # while a connector is reset: its offsets move on to streaming without a change of the source


class ExpectationUnmet(OracleMismatch):
    """Silver does not show what a scenario's check expects."""


class ScenarioError(SandboxError):
    def __init__(self, path: Path, line: int | None, reason: str):
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {reason}",
                         "see \"Scenarios\" in the documentation (docs/guides/scenarios.md) for the format")
        self.path, self.line, self.reason = path, line, reason


# --- reading with line numbers -------------------------------------------------------------------------------
class _Map(dict):
    line: int = 0
    key_lines: dict


def at_lines_of(original, mapping: dict) -> dict:
    """`mapping` (a rewrite of `original`) with the file lines `original` came from, for its errors."""
    placed = _Map(mapping)
    placed.line, placed.key_lines = getattr(original, "line", None), getattr(original, "key_lines", {})
    return placed


class _List(list):
    line: int = 0


class _Loader(yaml.SafeLoader):
    """Keeps the line of every mapping, list and key, so errors can point into the file."""


def _construct_map(loader, node):
    loader.flatten_mapping(node)
    result = _Map()
    result.line = node.start_mark.line + 1
    result.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in result:
            raise ScenarioError(Path(loader.name), key_node.start_mark.line + 1, f"duplicate key {key!r}")
        result[key] = loader.construct_object(value_node, deep=True)
        result.key_lines[key] = key_node.start_mark.line + 1
    return result


def _construct_list(loader, node):
    result = _List(loader.construct_object(child, deep=True) for child in node.value)
    result.line = node.start_mark.line + 1
    return result


@dataclass(frozen=True)
class RandomText:
    """`!random_text {length: N, seed: S}`: N letters and digits drawn with seed S. Such text does not compress, as
    documents and blobs do not: Postgres stores a value of it over about 2 kB out of line (TOAST)."""

    length: int
    seed: int = 0

    def text(self) -> str:
        draw = random.Random(self.seed)
        return "".join(draw.choices(string.ascii_letters + string.digits, k=self.length))


def _construct_random_text(loader, node):
    line = node.start_mark.line + 1
    fields = loader.construct_mapping(node) if isinstance(node, yaml.MappingNode) else None
    if not fields or set(fields) - {"length", "seed"} or not all(
            type(fields.get(name, 0)) is int for name in ("length", "seed")) \
            or not 0 < fields.get("length", 0) <= RANDOM_TEXT_MAX:
        raise ScenarioError(Path(loader.name), line, f"!random_text takes {{length: <1 to {RANDOM_TEXT_MAX:,}>, "
                                                     "seed: <an integer>}")
    return RandomText(fields["length"], fields.get("seed", 0))


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data) -> bool:  # a file names each value where it is used
        return True


_Dumper.add_representer(_Map, lambda dumper, data: dumper.represent_dict(data))
_Dumper.add_representer(_List, lambda dumper, data: dumper.represent_list(data))
_Dumper.add_representer(RandomText, lambda dumper, data: dumper.represent_mapping(
    "!random_text", {"length": data.length, "seed": data.seed}, flow_style=True))
_Dumper.add_representer(Decimal, lambda dumper, data: dumper.represent_str(str(data)))


def dump(raw: dict) -> str:
    """A scenario's mapping as a file holds it (read back by `read` as it was)."""
    return yaml.dump(raw, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)


_Loader.add_constructor("!random_text", _construct_random_text)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_map)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_list)


# --- the model -----------------------------------------------------------------------------------------------
@dataclass
class Step:
    kind: str
    args: dict
    line: int


@dataclass
class Scenario:
    path: Path
    name: str
    description: str
    tables: list[str]
    jobs: list[dict]  # the job options it runs under: each a run of its own over the same steps
    given: dict[str, list[dict]]
    steps: list[Step]
    labels: list[str] = field(default_factory=list)
    source: str | None = None  # runs only where this source holds the tables itself, not a stand-in
    replica_identity: str | None = None  # its Postgres tables' REPLICA IDENTITY while it runs (else their own)
    schemas: dict[str, Table] = field(default_factory=dict)  # its tables' columns and keys
    debezium: dict[str, str] = field(default_factory=dict)  # settings of its tables' connectors while it runs
    silver: dict[str, dict] = field(default_factory=dict)  # its tables' own silver layout: {table: settings}
    catches: dict[str, tuple[Catch, ...]] = field(default_factory=dict)  # broken job variant -> how it must fail
    bound: bool = False  # written on TICKIT's tables and bound to the project's (`binding`)

    @property
    def job(self) -> dict:
        """The first job's options (the only one's, in most files)."""
        return self.jobs[0]


def find(name: str | Path) -> Path:
    """A scenario file by its path, or a shipped scenario by its name (`edge-values`)."""
    path = Path(name)
    if path.exists() or path.suffix or len(path.parts) > 1:
        return path
    shipped = SHIPPED / f"{name}.yaml"
    if shipped.is_file():
        return shipped
    raise SandboxError(f"no scenario file {name} and no shipped scenario of that name",
                       f"give a path, or one of: {', '.join(shipped_names())}")


def shipped_names() -> list[str]:
    return sorted(path.stem for path in SHIPPED.glob("*.yaml"))


def load(path: Path, settings: Settings | None = None) -> Scenario:
    """The scenario file, validated against the tables of `settings`' project (the environment's by default)."""
    return validate(read(path), path, settings)


def read(path: Path) -> dict:
    """The scenario file's mapping, unvalidated (each mapping and list knows its line)."""
    path = Path(path)
    try:
        with open(path, encoding="utf-8") as handle:
            loader = _Loader(handle)
            loader.name = str(path)
            try:
                raw = loader.get_single_data()
            finally:
                loader.dispose()
    except OSError as exc:
        raise ScenarioError(path, None, f"cannot read the file: {exc.strerror}") from exc
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        raise ScenarioError(path, line, f"not valid YAML: {exc.problem}") from exc
    return raw


def validate(raw, path: Path, settings: Settings | None = None, home: bool = False) -> Scenario:
    """The scenario, checked against the tables of `settings`' project (the environment's by default), or with
    `home` against TICKIT's, which the shipped scenarios are written on."""
    return _Validator(Path(path), settings, home).scenario(raw)


def home_schema(table: str) -> Table:
    """A table of TICKIT, which the shipped scenarios are written on."""
    return get_table(table)


def table_schema(table: str, settings: Settings | None = None) -> Table:
    """A table of the project scenarios run on (`settings`', else the environment's), as the project declares it:
    TICKIT's declared columns, a project's as its source's catalog describes them (the sandbox must be up)."""
    return catalog.table_schema(settings or _project_settings(project_file(os.environ)), table)


@functools.lru_cache(maxsize=8)  # read once per project file: the fuzzer asks per key it draws
def _project_settings(path: Path) -> Settings:
    return Settings.load()


class _Validator:
    def __init__(self, path: Path, settings: Settings | None = None, home: bool = False):
        self.path, self.settings, self.home = path, settings, home
        # the project's tables (as the environment's file declares them, before any stand-in takes tables over)
        self.topology = load_topology(TOPOLOGY_FILE) if home else settings.topology if settings \
            else load_topology(project_file(os.environ))
        self.schemas: dict[str, Table] = {}
        self.added: dict[str, set[str]] = {}  # columns the steps so far added and did not drop
        self.silver_has: dict[str, set[str]] = {}  # columns the steps so far added, dropped or not (silver keeps them)

    def fail(self, where, reason: str, key=None):
        line = getattr(where, "key_lines", {}).get(key) if key is not None else None
        raise ScenarioError(self.path, line or getattr(where, "line", None), reason)

    def scenario(self, raw) -> Scenario:
        if not isinstance(raw, dict):
            self.fail(raw, "a scenario is a mapping with name, tables and steps")
        for key in raw:
            if key not in TOP_LEVEL:
                self.fail(raw, f"unknown key {key!r}; allowed: {', '.join(sorted(TOP_LEVEL))}", key)
        for key in ("name", "tables", "steps"):
            if key not in raw:
                self.fail(raw, f"missing {key!r}")
        tables = raw["tables"]
        if not isinstance(tables, list) or not tables:
            self.fail(raw, "tables must be a non-empty list of table names", "tables")
        for table in tables:
            self.table_name(raw, table, "tables")
        if "source" in raw:
            self.source(raw, tables)
        if "replica_identity" in raw:
            self.replica_identity(raw, tables)
        if "needs" in raw:
            self.needs(raw, tables)
        debezium = self.debezium(raw) if "debezium" in raw else {}
        silver = self.silver(raw, tables) if "silver" in raw else {}
        jobs = self.jobs(raw)
        given = raw.get("given") or {}
        if not isinstance(given, dict):
            self.fail(raw, "given is a mapping of table names to lists of rows", "given")
        for table, rows in given.items():
            self.table_name(given, table, table, allowed=tables)
            if not isinstance(rows, list):
                self.fail(given, f"given.{table} must be a list of rows", table)
            for row in rows:
                self.row(row, table, full=True)
        if not isinstance(raw["steps"], list) or not raw["steps"]:
            self.fail(raw, "steps must be a non-empty list", "steps")
        steps = [self.step(step, tables) for step in raw["steps"]]
        for job in jobs:
            self.outages_have_a_batch(steps, bool(job.get("continuous")))
        self.mark_rewind_targets(steps)
        labels = [s.args["label"] for s in steps if s.kind == "check"]
        catches = self.catches(raw, tables) if "catches" in raw else {}
        return Scenario(self.path, str(raw["name"]), str(raw.get("description", "")).strip(), list(tables),
                        jobs, {t: list(r) for t, r in given.items()}, steps, labels, raw.get("source"),
                        raw.get("replica_identity"), {t: self.schema(t) for t in tables}, debezium,
                        silver, catches)

    def jobs(self, raw) -> list[dict]:
        """`job`: one mapping of job options, or a list of them (the scenario runs under each)."""
        given = raw.get("job")
        jobs = given if isinstance(given, list) else [given or {}]
        if not jobs:
            self.fail(raw, "job is a mapping of job options, or a non-empty list of them", "job")
        for job in jobs:
            if not isinstance(job, dict):
                self.fail(raw, "job is a mapping of job options, or a list of them", "job")
            for key in job:
                if key not in JOB_OPTIONS:
                    self.fail(job, f"unknown job option {key!r}; allowed: {', '.join(sorted(JOB_OPTIONS))}", key)
            if "session_zone" in job and not _is_zone(job["session_zone"]):
                self.fail(job, f"session_zone {job['session_zone']!r} is no time zone; give an IANA name such as "
                               "America/New_York or UTC", "session_zone")
        return [dict(job) for job in jobs]

    def schema(self, table: str) -> Table:
        if table not in self.schemas:
            self.schemas[table] = home_schema(table) if self.home else table_schema(table, self.settings)
        return self.schemas[table]

    def source(self, raw, tables: list[str]) -> None:
        topology = self.topology
        if raw["source"] not in topology.sources:
            self.fail(raw, f"unknown source {raw['source']!r}; sources: {', '.join(topology.sources)}", "source")
        elsewhere = [t for t in tables if topology.table(t).source != raw["source"]]
        if elsewhere:
            self.fail(raw, f"{', '.join(elsewhere)} not on source {raw['source']!r} in {topology.file_label}",
                      "source")

    def debezium(self, raw) -> dict[str, str]:
        if not isinstance(raw["debezium"], dict) or not raw["debezium"]:
            self.fail(raw, "debezium is a mapping of Debezium connector settings to values", "debezium")
        settings = debezium_settings.as_settings(raw["debezium"])
        for setting, value in settings.items():
            refused = debezium_settings.refusal(setting, value)
            if refused:
                self.fail(raw["debezium"], f"debezium sets {refused[0]}; {refused[1]}", setting)
        return settings

    def silver(self, raw, tables: list[str]) -> dict[str, dict]:
        given = raw["silver"]
        if not isinstance(given, dict) or not given:
            self.fail(raw, "silver is a mapping of table names to their silver settings", "silver")
        layouts = {}
        for table, settings in given.items():
            self.table_name(given, table, table, allowed=tables)
            if not isinstance(settings, dict) or set(settings) - set(SILVER_SETTINGS):
                self.fail(given, f"silver.{table} takes {', '.join(SILVER_SETTINGS)}", table)
            partition_by = settings.get("partition_by", [])
            if not isinstance(partition_by, list) or not all(c in self.schema(table).column_names
                                                              for c in partition_by):
                self.fail(settings, f"partition_by is a list of {table}'s columns", "partition_by")
            index = settings.get("index", "global_simple" if partition_by else "bucket")
            if index not in INDEXES:
                self.fail(settings, f"index is one of {', '.join(INDEXES)}", "index")
            layouts[table] = {**settings, "index": index}
        return layouts

    def replica_identity(self, raw, tables: list[str]) -> None:
        if raw["replica_identity"] not in REPLICA_IDENTITIES:
            self.fail(raw, f"replica_identity is {' or '.join(REPLICA_IDENTITIES)}, not {raw['replica_identity']!r}",
                      "replica_identity")
        engines = {self.topology.sources[self.topology.table(t).source].engine for t in tables}
        if "postgres" not in engines:
            self.fail(raw, "replica_identity is a setting of Postgres tables, and none of this scenario's tables is "
                           "on Postgres", "replica_identity")

    def needs(self, raw, tables: list[str]) -> None:
        """`needs`: what a table must have beyond what the steps show, where the scenario is bound to a project's:
        `engines`, the engines it may be on; `values: exact`, columns that hold the file's values as they are (a
        scenario about the values themselves), not stand-ins of another type."""
        given = raw["needs"]
        form = f"{{engines: [{', '.join(ENGINES)}], values: exact}}, either or both"
        if not isinstance(given, dict) or not given:
            self.fail(raw, f"needs is a mapping of table names to what each needs: {form}", "needs")
        for table, need in given.items():
            self.table_name(given, table, table, allowed=tables)
            engines = need.get("engines", list(ENGINES)) if isinstance(need, dict) else None
            if not need or set(need) - {"engines", "values"} or not isinstance(engines, list) or not engines \
                    or set(engines) - set(ENGINES) or need.get("values", "exact") != "exact":
                self.fail(given, f"needs.{table} is {form}", table)

    def catches(self, raw, tables: list[str]) -> dict[str, tuple[Catch, ...]]:
        """`catches`: the broken variants of the job this scenario must catch, each with the failures it may cause
        (the check, the table, and a column or a key of the scenario's; read once the steps have added theirs)."""
        given = raw["catches"]
        form = "{variant: [{check: snapshot, table: <table>, column: <column>, key: [<key values>]}, ...]}"
        if not isinstance(given, dict) or not given:
            self.fail(raw, f"catches is a mapping of broken variants to the failures each causes: {form}", "catches")
        found = {}
        for variant, catches in given.items():
            if variant not in VARIANTS:
                self.fail(given, f"unknown broken variant {variant!r}; variants: {', '.join(VARIANTS)}", variant)
            if not isinstance(catches, list) or not catches:
                self.fail(given, f"catches.{variant} is a list of failures: {form}", variant)
            found[variant] = tuple(self.catch(item, tables, variant) for item in catches)
        return found

    def catch(self, item, tables: list[str], variant: str) -> Catch:
        if not isinstance(item, dict) or not {"check", "table"} <= set(item) <= {"check", "table", "column", "key"}:
            self.fail(item, f"a failure of {variant} names check and table, and a column or key of it")
        if item["check"] not in CHECKS:
            self.fail(item, f"check is one of {', '.join(CHECKS)}, not {item['check']!r}", "check")
        table = self.table_name(item, item["table"], "table", allowed=tables)
        column = item.get("column")
        known = {*self.schema(table).column_names, *self.silver_has.get(table, set()), ANY_COLUMN}
        if column is not None and column not in known:
            self.fail(item, f"{table} has no column {column!r}", "column")
        key = item.get("key")
        if key is not None and (not isinstance(key, list) or len(key) != len(self.schema(table).primary_key)):
            self.fail(item, f"key is a list of {table}'s key values: {', '.join(self.schema(table).primary_key)}",
                      "key")
        return Catch(str(item["check"]), table, column, tuple(key) if key is not None else None)

    def table_name(self, where, table, key, allowed=None) -> str:
        names = sorted(t.name for t in self.topology.tables)
        if table not in names:
            self.fail(where, f"unknown table {table!r}; the project's tables: {', '.join(names)}", key)
        if allowed is not None and table not in allowed:
            self.fail(where, f"table {table!r} is not in this scenario's tables", key)
        return table

    def row(self, row, table: str, full: bool = False, only_key: bool = False, with_key: bool = False) -> None:
        """`with_key`: an expected row of silver, which may name dropped columns too."""
        if not isinstance(row, dict) or not row:
            self.fail(row, f"expected a mapping of {table} columns to values")
        schema = self.schema(table)
        known = set(schema.column_names) | (self.silver_has if with_key else self.added).get(table, set())
        for column in row:
            if column not in known:
                self.fail(row, f"{table} has no column {column!r}", column)
            if column in schema.column_names and not fits(schema.column(column), row[column]):
                self.fail(row, f"{table}.{column} is {schema.column(column).type}, not {row[column]!r}", column)
        if only_key and set(row) != set(schema.primary_key):
            self.fail(row, f"a key of {table} names exactly {', '.join(schema.primary_key)}")
        if with_key and not set(schema.primary_key) <= set(row):
            self.fail(row, f"an expected row of {table} names its key: {', '.join(schema.primary_key)}")
        if full:
            missing = [c.name for c in schema.columns if not c.nullable and c.name not in row]
            if missing:
                self.fail(row, f"{table} row lacks required columns: {', '.join(missing)}")

    def step(self, raw, tables: list[str]) -> Step:
        if not isinstance(raw, dict) or len(raw) != 1:
            self.fail(raw, f"a step is a mapping with one of: {', '.join(sorted(STEP_KINDS))}")
        (kind, args), = raw.items()
        if kind not in STEP_KINDS:
            self.fail(raw, f"unknown step {kind!r}; steps: {', '.join(sorted(STEP_KINDS))}", kind)
        line = getattr(raw, "key_lines", {}).get(kind)
        if kind in CHANGE_KINDS or kind in ("grow_topic", "redeliver"):
            return Step(kind, self.change(kind, args, tables, raw), line)
        if kind == "transaction":
            if not isinstance(args, list) or not args:
                self.fail(raw, "a transaction is a list of changes", kind)
            changes = [self.step(item, tables) for item in args]
            if any(c.kind not in CHANGE_KINDS - {"truncate"} for c in changes):
                self.fail(args, "a transaction holds changes only, and no truncate: "
                                f"{', '.join(sorted(CHANGE_KINDS - {'truncate'}))}")
            return Step(kind, {"changes": changes}, line)
        if kind == "check":
            return Step(kind, self.check(args, tables, raw), line)
        if kind == "rewind_connector":
            return Step(kind, self.rewind(args, tables, raw), line)
        if kind == "snapshot_table":
            return Step(kind, self.snapshot(args, tables, raw), line)
        if kind == "reset_connector":
            return Step(kind, self.reset(args, tables, raw), line)
        if kind == "source_clock":
            if args is not None and not isinstance(args, dt.datetime):
                self.fail(raw, "source_clock is a timestamp (2008-01-01 00:00:00) or null", kind)
            return Step(kind, {"at": args}, line)
        return Step(kind, {}, line)

    def outages_have_a_batch(self, steps: list[Step], continuous: bool) -> None:
        """A registry outage runs the job once over the changes made since the previous check: the job must run a
        batch at a time, not be paused, and have changes to read. Its failed batch is the job's next one again (Spark
        replays a planned batch as it was), so a pause needs a `run` or `check` before it, to start after it."""
        paused, changed, replay = False, False, False
        for step in steps:
            if step.kind == "registry_outage":
                reason = ("the job runs continuously" if continuous else "the job is paused" if paused
                          else "no change since the previous check" if not changed else "")
                if reason:
                    raise ScenarioError(self.path, step.line, "registry_outage runs the job once over the changes "
                                                              f"since the previous check, but {reason}")
            if step.kind == "pause" and replay:
                raise ScenarioError(self.path, step.line, "a pause after registry_outage needs a run: or check: "
                                                          "between them: the job replays the outage's batch first")
            replay = step.kind == "registry_outage" or (replay and step.kind not in ("run", "check"))
            paused = {"pause": True, "resume": False}.get(step.kind, paused)
            evented = step.kind in ROW_CHANGES | EVENTED_STEPS
            changed = evented or (changed and step.kind != "check")

    def rewind(self, args, tables: list[str], where) -> dict:
        if not isinstance(args, dict) or set(args) != {"table", "to"}:
            self.fail(where, "rewind_connector takes table (its connector is rewound) and to (the label of an earlier "
                             "check)", "rewind_connector")
        table = self.table_name(args, args["table"], "table", allowed=tables)
        engine = self.topology.sources[self.topology.table(table).source].engine
        if engine not in BINLOG_ENGINES:
            self.fail(args, f"{table} is on {engine}: only a binlog connector (MariaDB, MySQL) can be set back to an "
                            "earlier position; a Postgres slot never sends again what it confirmed", "table")
        return dict(args)

    def snapshot(self, args, tables: list[str], where) -> dict:
        if not isinstance(args, dict) or not {"table", "while"} <= set(args) <= {"table", "while", "chunk_rows"}:
            self.fail(where, "snapshot_table takes table (snapshotted incrementally), while (the changes made while "
                             "it is read) and chunk_rows (optional)", "snapshot_table")
        if not isinstance(args.get("chunk_rows", 1), int) or args.get("chunk_rows", 1) < 1:
            self.fail(args, "chunk_rows is a number of rows (Debezium's incremental.snapshot.chunk.size)", "chunk_rows")
        table = self.table_name(args, args["table"], "table", allowed=tables)
        engine = self.topology.sources[self.topology.table(table).source].engine
        if engine not in ("postgres", *BINLOG_ENGINES):
            self.fail(args, f"{table} is on {engine}: the sandbox signals incremental snapshots on Postgres, MariaDB "
                            "and MySQL", "table")
        if not isinstance(args["while"], list) or not args["while"]:
            self.fail(args, "while is a list of changes", "while")
        changes = [self.step(item, tables) for item in args["while"]]
        if any(c.kind not in ROW_CHANGES for c in changes) or not any(c.args["table"] == table for c in changes):
            self.fail(args, f"while holds row changes only ({', '.join(sorted(ROW_CHANGES))}), one of them to "
                            f"{table}", "while")
        return {"table": table, "while": changes, "chunk_rows": args.get("chunk_rows")}

    def reset(self, args, tables: list[str], where) -> dict:
        if not isinstance(args, dict) or set(args) != {"table"}:
            self.fail(where, "reset_connector takes table (its connector's offsets are reset)", "reset_connector")
        table = self.table_name(args, args["table"], "table", allowed=tables)
        engine = self.topology.sources[self.topology.table(table).source].engine
        if engine != "postgres":
            self.fail(args, f"{table} is on {engine}: reset_connector resets a Postgres connector; a binlog "
                            "connector is set back with rewind_connector", "table")
        return dict(args)

    def mark_rewind_targets(self, steps: list[Step]) -> None:
        """Each rewind's check must come before it; that check notes where the table's binlog ends (`marks`)."""
        for index, step in enumerate(steps):
            if step.kind != "rewind_connector":
                continue
            target = next((s for s in reversed(steps[:index])
                           if s.kind == "check" and s.args["label"] == step.args["to"]), None)
            if target is None:
                raise ScenarioError(self.path, step.line, f"rewind_connector: no check labelled {step.args['to']!r} "
                                                          "before it")
            target.args.setdefault("marks", []).append(step.args["table"])

    def change(self, kind: str, args, tables: list[str], where) -> dict:
        if not isinstance(args, dict) or "table" not in args:
            self.fail(where, f"{kind} needs a table", kind)
        table = self.table_name(args, args["table"], "table", allowed=tables)
        required = {"insert": ["row"], "update": ["key", "set"], "delete": ["key"], "update_key": ["key", "new_key"],
                    "add_column": ["column", "type"], "drop_column": ["column"], "alter_column": ["column", "type"],
                    "truncate": [],
                    "grow_topic": ["set"], "redeliver": ["key"]}[kind]
        allowed = {"table", *required, *(["default"] if kind == "add_column" else [])}
        for key in args:
            if key not in allowed:
                self.fail(args, f"{kind} takes {', '.join(sorted(allowed))}, not {key!r}", key)
        for key in required:
            if key not in args:
                self.fail(args, f"{kind} needs {key!r}")
        if kind in ("add_column", "alter_column") and args["type"] not in LOGICAL_TYPES:
            self.fail(args, f"unknown column type {args['type']!r}; types: {', '.join(LOGICAL_TYPES)}", "type")
        if kind == "add_column":
            self.added.setdefault(table, set()).add(args["column"])
            self.silver_has.setdefault(table, set()).add(args["column"])
            return dict(args)
        if kind == "alter_column":  # TICKIT's own columns keep their types, for the tests that run after
            if args["column"] not in self.added.get(table, set()):
                self.fail(args, f"alter_column changes a column an earlier add_column of {table} added, not "
                                f"{args['column']!r}", "column")
            return dict(args)
        if kind == "drop_column":  # TICKIT's own columns stay, for the tests that run after
            if args["column"] not in self.added.get(table, set()):
                self.fail(args, f"drop_column drops a column an earlier add_column of {table} added, not "
                                f"{args['column']!r}", "column")
            self.added[table].discard(args["column"])
            return dict(args)
        for key in ("key", "new_key"):
            if key in args:
                self.row(args[key], table, only_key=True)
        for key in ("row", "set"):
            if key in args:
                self.row(args[key], table, full=key == "row")
        return dict(args)

    def check(self, args, tables: list[str], where) -> dict:
        if isinstance(args, str):
            return {"label": args, "expect": {}}
        if not isinstance(args, dict) or "label" not in args:
            self.fail(where, "check is a label, or a mapping with label and expect", "check")
        expect = args.get("expect") or {}
        for table, spec in expect.items():
            self.table_name(expect, table, table, allowed=tables)
            if not isinstance(spec, dict):
                self.fail(expect, "expect.<table> is a mapping of rows, deleted, absent", table)
            for key in spec:
                if key not in ("rows", "deleted", "absent"):
                    self.fail(spec, f"unknown expectation {key!r}; use rows, deleted or absent", key)
                if not isinstance(spec[key], list):
                    self.fail(spec, f"expect.{table}.{key} is a list of rows", key)
            for row in spec.get("rows", []):
                self.row(row, table, with_key=True)
            for key in spec.get("deleted", []) + spec.get("absent", []):
                self.row(key, table, only_key=True)
        return {"label": str(args["label"]), "expect": dict(expect)}


def fits(column: Column, value) -> bool:
    """Whether a YAML value can be written to a column of this type (NULL fits any: the database judges that)."""
    kind = column.type
    if value is None or kind == JSON:
        return True
    if kind in INTEGER_RANGES:
        low, high = INTEGER_RANGES[kind]
        return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
    if kind in (DECIMAL, NUMBER):
        try:
            return not isinstance(value, bool) and Decimal(str(value)).is_finite()
        except ArithmeticError:
            return False
    if kind == STR and column.form == "set":
        return isinstance(value, str) and all(member in column.labels for member in value.split(",") if member)
    if kind == STR and column.labels:
        return value in column.labels
    if column.carried in BIT_LAYOUTS:  # a bit string's number, or Postgres's text of its bits
        if isinstance(value, str):
            return set(value) <= {"0", "1"}
        return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2 ** (column.bit_length or 64)
    if isinstance(value, RandomText):
        return kind == STR
    accepted = {STR: str, UUID: str, BYTES: (bytes, str), DATE: dt.date, TIMESTAMP: dt.datetime,
                TIMESTAMPTZ: dt.datetime, BOOL: bool, FLOAT: (int, float), DOUBLE: (int, float), TIME: (str, int),
                TIMETZ: str, INTERVAL: str, ARRAY: list}[kind]
    return isinstance(value, accepted) and not (kind == DATE and isinstance(value, dt.datetime))


# --- running -------------------------------------------------------------------------------------------------
@dataclass
class ScenarioResult:
    name: str
    checks: int
    expectations: int


def unavailable(scenario: Scenario, settings) -> str | None:
    """Why this sandbox cannot run the scenario (its source is not there), or None."""
    if scenario.source is None or scenario.source in settings.topology.sources:
        return None
    return (f"needs the {scenario.source} source, which this sandbox lacks (its tables live on a stand-in); "
            "SQL Server: set SANDBOX_MSSQL_DSN or run the compose backend")


def run(scenario: Scenario, pipeline, mutator: Mutator, oracle: Oracle, say=lambda line: None,
        job: dict | None = None, verify=None, on_given=lambda: None) -> ScenarioResult:
    """Play the scenario against the sandbox on `pipeline` (a fresh lake over the scenario's tables, written under
    `job`, one of its jobs: the first by default). `verify` checks the history at the end (the oracle's whole
    history by default)."""
    job = scenario.job if job is None else job
    say(f"scenario: {scenario.name}")
    emptied = {table: mutator.rows(table) for table in _truncated_tables(scenario)}
    try:
        with session_zone(pipeline.spark, pipeline.config.session_zone):
            expectations = _run(scenario, pipeline, mutator, oracle, say, job, verify or oracle.verify_history,
                                on_given)
    finally:
        mutator.source_clock = None  # a file that leaves the clock stepped back does not stamp later changes
        for table, rows in emptied.items():  # the tables it truncated hold their rows again for later tests
            mutator.restore(table, rows)
    count = sum(len(rows) for step, _ in expectations for spec in step.args["expect"].values() for rows in spec.values())
    return ScenarioResult(scenario.name, len(scenario.labels), count)


def _run(scenario: Scenario, pipeline, mutator: Mutator, oracle: Oracle, say, job: dict, verify, on_given) -> list:
    give(scenario, mutator)
    if job.get("continuous"):
        pipeline.start_continuous()
    for change in _alterations(scenario):
        oracle.expect_widening(change.args["table"], added_column(change.args["column"], change.args["type"]))
    oracle.track(scenario.tables, label="given")
    on_given()  # silver holds the starting rows
    with _source_settings(scenario, mutator), _connector_settings(scenario, oracle, pipeline):
        expectations = _play_steps(scenario, pipeline, mutator, oracle, say)
    verify()
    for step, recorded in expectations:  # every expectation again, by time travel to its commit
        _expect(step, oracle, recorded, time_travel=True)
    return expectations


def _play_steps(scenario: Scenario, pipeline, mutator: Mutator, oracle: Oracle, say) -> list:
    expectations, marks = [], {}
    for step in scenario.steps:
        say(f"  line {step.line}: {step.kind}")
        try:
            outcome = play(step, pipeline, mutator, oracle, marks)
        except SandboxError as exc:
            raise ScenarioError(scenario.path, step.line, f"{step.kind} failed: {exc.message}") from exc
        if outcome:
            expectations.append((step, outcome))
    return expectations


def pipeline_options(scenario: Scenario, job: dict) -> dict:
    """The options a pipeline for one of the scenario's jobs is made with (`continuous` is how it is run)."""
    options = {key: value for key, value in job.items() if key != "continuous"}
    if scenario.replica_identity == "default":
        options["key_only_deletes"] = True  # as a team configures its job for such tables
    settings = {table: dict(layout) for table, layout in scenario.silver.items()}
    if scenario.bound:  # the job's table type and deletes, as on TICKIT's tables, over the project's own for them
        for table in scenario.tables:
            settings.setdefault(table, {}).update(table_type=job.get("table_type", "COPY_ON_WRITE"),
                                                  hard_deletes=bool(job.get("hard_deletes", False)))
    if settings:
        options["table_settings"] = settings
    return options


def _source_settings(scenario: Scenario, mutator: Mutator):
    if scenario.replica_identity is None:
        return contextlib.nullcontext()
    return mutator.replica_identity(scenario.tables, scenario.replica_identity)


@contextlib.contextmanager
def _connector_settings(scenario: Scenario, oracle: Oracle, pipeline):
    """The scenario's `debezium:` settings on the connectors of its tables while it runs, then their own again.
    Each connector is stopped and resumed after a change, so that every event after it is written under the
    change. With tombstones on, each table the scenario deletes from must show one, or the run tested nothing."""
    if not scenario.debezium:
        yield
        return
    settings = oracle.settings
    client = ConnectClient(settings.url("connect"))
    connectors = sorted({_connector_of(t, settings, oracle.mutator) for t in scenario.tables})
    own = {name: client.registered_config(name) for name in connectors}
    if None in own.values():
        raise SandboxError(f"connector {min(n for n, c in own.items() if c is None)} is not registered, so the "
                           "scenario's `debezium:` settings have nothing to change", "run `sandbox up`")
    topics_of = {t: pipeline.config.spec(t).topic for t in _deleted_from(scenario)}
    ends = end_offsets(settings.endpoint("kafka").address, list(topics_of.values()))
    try:
        for name in connectors:
            client.put_config(name, own[name] | scenario.debezium)
            client.cycle(name)
        yield
        if scenario.debezium.get("tombstones.on.delete") == "true":
            _expect_tombstones(settings.endpoint("kafka").address, oracle, topics_of, ends)
    finally:
        for name in connectors:
            client.put_config(name, own[name])
            client.cycle(name)


def _connector_of(table: str, settings: Settings, mutator: Mutator) -> str:
    """The connector capturing the table (a stand-in's, where its own source is absent)."""
    return settings.topology.sources[mutator.placement(table).captured.source].connector


def _deleted_from(scenario: Scenario) -> list[str]:
    return sorted({c.args["table"] for c in changes(scenario) if c.kind == "delete"})


def _expect_tombstones(bootstrap: str, oracle: Oracle, topics_of: dict[str, str], ends: dict) -> None:
    for table, topic in topics_of.items():
        with ChangeReader(bootstrap, topic, oracle.registry, from_offsets=ends.get(topic)) as reader:
            reader.wait_for(lambda e: e.value is None, oracle.timeout,
                            f"a tombstone in {topic} after the scenario's deletes from {table} (tombstones.on.delete "
                            "is true): the connector did not take the scenario's settings")


def _is_zone(name) -> bool:
    try:
        zoneinfo.ZoneInfo(str(name))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return False
    return True


@contextlib.contextmanager
def session_zone(spark, zone: str):
    """The harness's Spark session, which runs the job under test and reads silver, in `zone` for a while."""
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        yield
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)


def _truncated_tables(scenario: Scenario) -> list[str]:
    return sorted({step.args["table"] for step in scenario.steps if step.kind == "truncate"})


def give(scenario: Scenario, mutator: Mutator) -> None:
    """Make the source hold exactly the given rows, and none under the keys the steps insert or move rows to
    (a rerun starts from the same state; rows under other keys are left alone). A column the steps retype or add with
    a default is dropped first: an earlier run left it with its new type or its rows holding the default, and the
    steps add it again; on a project's tables (a bound scenario, which a team runs again and again) every column the
    steps add is."""
    added = [c for c in changes(scenario)
             if c.kind == "add_column" and (scenario.bound or c.args.get("default") is not None)]
    dropped = sorted({(c.args["table"], c.args["column"]) for c in [*_alterations(scenario), *added]})
    for table, column in dropped:
        mutator.drop_column(table, column)
    if dropped:  # a project's columns are read from its catalog, which may hold them from an earlier run
        mutator.read_tables_again()
    for table, key in _claimed_keys(scenario):
        if mutator.read_row(table, key) is not None:
            mutator.delete(table, key)
    for table, rows in scenario.given.items():
        for row in rows:
            mutator.insert(table, _values(row))


def changes(scenario: Scenario) -> list[Step]:
    """Every change step, those of transactions and of snapshots' `while` included."""
    nested = {"transaction": "changes", "snapshot_table": "while"}
    return [c for step in scenario.steps for c in (step.args[nested[step.kind]] if step.kind in nested else [step])]


def _alterations(scenario: Scenario) -> list[Step]:
    return [c for c in changes(scenario) if c.kind == "alter_column"]


def _claimed_keys(scenario: Scenario) -> list[tuple[str, dict]]:
    made = changes(scenario)
    claimed = [(t, row) for t, rows in scenario.given.items() for row in rows]
    claimed += [(c.args["table"], c.args["row"]) for c in made if c.kind == "insert"]
    claimed += [(c.args["table"], c.args["new_key"]) for c in made if c.kind == "update_key"]
    keys = []
    for table, row in claimed:
        key = {k: row[k] for k in scenario.schemas[table].primary_key}
        if (table, key) not in keys:
            keys.append((table, key))
    return keys


def play(step: Step, pipeline, mutator: Mutator, oracle: Oracle, marks: dict | None = None):
    """Play one step; `marks` keeps, across a run's steps, where a check found each binlog it notes ending."""
    marks = {} if marks is None else marks
    if step.kind in CHANGE_KINDS:
        _change(mutator, step.kind, step.args)
    elif step.kind == "transaction":
        with mutator.transaction(step.args["changes"][0].args["table"]):
            for change in step.args["changes"]:
                _change(mutator, change.kind, change.args)
    elif step.kind == "source_clock":
        mutator.source_clock = step.args["at"]
    elif step.kind == "pause":
        oracle.pause()
    elif step.kind == "resume":
        oracle.resume()
    elif step.kind == "run":
        pipeline.run_once()
    elif step.kind == "restart":
        pipeline.restart()
    elif step.kind == "registry_outage":
        _registry_outage(pipeline, oracle)
    elif step.kind == "grow_topic":
        _grow_topic(step.args, pipeline, mutator, oracle)
    elif step.kind == "redeliver":
        topics.redeliver_earlier(oracle.settings.endpoint("kafka").address, oracle.registry,
                                 pipeline.config.spec(step.args["table"]).topic, step.args["key"])
    elif step.kind == "snapshot_table":
        _snapshot_table(step.args, pipeline, mutator, oracle)
    elif step.kind == "reset_connector":
        _reset_connector(step.args, pipeline, mutator, oracle)
    elif step.kind == "rewind_connector":
        _rewind_connector(step.args, pipeline, mutator, oracle, marks[(step.args["to"], step.args["table"])])
    elif step.kind == "check":
        recorded = oracle.round(step.args["label"])
        marks.update({(step.args["label"], table): mutator.binlog_mark(table) for table in step.args.get("marks", [])})
        # a table without changes since the last check is expected to hold at its latest recorded commit
        entries = {table: recorded.get(table) or oracle.recorded[table][-1] for table in step.args["expect"]}
        _expect(step, oracle, entries, time_travel=False)
        return entries
    return None


def _rewind_connector(args: dict, pipeline, mutator: Mutator, oracle: Oracle, mark: BinlogMark) -> None:
    """Set the connector of the table's source back to where its binlog ended at the check: Debezium reads it
    again and sends every change since once more, each with its first source position, after newer ones. Fails
    unless the table's topic then holds such a change sent again, since the step would otherwise test nothing."""
    table, settings = args["table"], oracle.settings
    connector = _connector_of(table, settings, mutator)
    bootstrap, topic = settings.endpoint("kafka").address, pipeline.config.spec(table).topic
    now = mutator.binlog_mark(table)
    ends = end_offsets(bootstrap, [topic])[topic]
    ConnectClient(settings.url("connect")).rewind_binlog(connector, mark)
    sent_before = binlog_position(now.file, now.pos)
    with ChangeReader(bootstrap, topic, oracle.registry, from_offsets=ends) as reader:
        reader.wait_for(lambda e: e.value is not None and event_position("binlog", e.value) < sent_before,
                        oracle.timeout, f"{connector} to send a change of {table} again after the rewind (no change "
                                        f"of {table} since check {args['to']!r}?)")


def _snapshot_table(args: dict, pipeline, mutator: Mutator, oracle: Oracle) -> None:
    """Signal an incremental snapshot of the table, make the `while` changes right after (the connector reads the
    signal from the log, so the snapshot's chunks are read around them), and return when Debezium notifies that it
    completed. Fails unless a chunk arrived after one of those changes, since the step would otherwise test nothing a
    streamed change does not."""
    table, settings = args["table"], oracle.settings
    p, bootstrap = mutator.placement(table), settings.endpoint("kafka").address
    topic, notices = pipeline.config.spec(table).topic, f"_sandbox-notifications.{p.captured.source}"
    signals.ensure_signal_table(settings, p)
    topics.ensure_topic(bootstrap, notices)
    with _streaming_after(ConnectClient(settings.url("connect")), _connector_of(table, settings, mutator), bootstrap,
                          _snapshot_settings(p, notices, args["chunk_rows"]), oracle.timeout, [topic, notices],
                          lambda: signals.nudge(settings, p)) as ends:
        with ChangeReader(bootstrap, topic, oracle.registry, from_offsets=ends[topic]) as reader, \
                ChangeReader(bootstrap, notices, oracle.registry, from_offsets=ends[notices]) as notified:
            signals.request_incremental_snapshot(settings, p)
            made = [_change(mutator, change.kind, change.args) for change in args["while"]]
            notified.wait_for(signals.completed, oracle.timeout, f"the notice that {table}'s snapshot completed")
            events = reader.read_to_end(oracle.timeout)
    if not _interleaved(events, [c for c in made if c.table == table]):
        raise SandboxError(f"{table}'s incremental snapshot was over before the changes made while it ran reached "
                           "its topic, so no chunk was read around them",
                           "set a smaller chunk_rows for the step (more chunks than the changes take to arrive)")


def _snapshot_settings(p, notices: str, chunk_rows: int | None) -> dict[str, str]:
    """The connector reads signals from the table's signalling table and notifies on a topic of the sandbox's."""
    settings = {"signal.data.collection": signals.collection(p), "notification.enabled.channels": "sink",
                "notification.sink.topic.name": notices}
    return settings | ({"incremental.snapshot.chunk.size": str(chunk_rows)} if chunk_rows else {})


def _reset_connector(args: dict, pipeline, mutator: Mutator, oracle: Oracle) -> None:
    """Stop the table's Postgres connector, delete its offsets and start it again, as an operator does to have a
    table sent again: finding no offsets, Debezium snapshots the table (this one alone,
    `snapshot.include.collection.list`) and sends each row as a snapshot read at the current position, after the
    changes silver holds, then streams from its slot. Fails unless every row arrives read again."""
    table, settings = args["table"], oracle.settings
    p, bootstrap = mutator.placement(table), settings.endpoint("kafka").address
    topic, rows = pipeline.config.spec(table).topic, mutator.row_count(table)
    client, connector = ConnectClient(settings.url("connect")), _connector_of(table, settings, mutator)
    only_this = {"snapshot.include.collection.list": f"{p.captured.namespace}.{p.table.name}"}
    with _streaming_after(client, connector, bootstrap, only_this, oracle.timeout, [topic],
                          lambda: signals.nudge(settings, p)) as ends:
        client.stop(connector)
        client.reset_offsets(connector)
        client.resume(connector)
        reads = itertools.count(1)
        with ChangeReader(bootstrap, topic, oracle.registry, from_offsets=ends[topic]) as reader:
            reader.wait_for(lambda e: _snapshot_read(e) and next(reads) >= rows, oracle.timeout,
                            f"the {rows} rows of {table} read again by {connector}'s snapshot")


@contextlib.contextmanager
def _streaming_after(client: ConnectClient, connector: str, bootstrap: str, settings: dict[str, str],
                     timeout: float, watched: list[str], nudge):
    """The connector under `settings` (and heartbeats) for a while; yields the `watched` topics' end offsets then.
    Its own settings return once a heartbeat after the block (and after `nudge()` changed the source) has moved its
    offsets to a streaming position: under offsets flushed mid-snapshot it would snapshot again, every table. Should
    that not happen, it runs on under `settings`, whose snapshot stays on the step's table."""
    own = client.registered_config(connector)
    heartbeats = f"__debezium-heartbeat.{own['topic.prefix']}"
    client.put_config(connector, own | settings | {"heartbeat.interval.ms": str(HEARTBEAT_MS)})
    client.cycle(connector)
    try:
        yield end_offsets(bootstrap, watched)
        beats = sum(end_offsets(bootstrap, [heartbeats]).get(heartbeats, {}).values())
        nudge()
        wait_until(lambda: sum(end_offsets(bootstrap, [heartbeats]).get(heartbeats, {}).values()) > beats, timeout,
                   f"a heartbeat of {connector}", "see `sandbox logs connect`")
        client.stop(connector)
        if signals.snapshot_in_progress(client.offsets(connector)):
            raise SandboxError(f"{connector}'s offsets still hold a snapshot after its heartbeat",
                               "see `sandbox logs connect`; `sandbox up` gives it its own settings")
    except BaseException:
        client.resume(connector)
        raise
    client.put_config(connector, own)
    client.resume(connector)
    client.wait_running(connector)


def _snapshot_read(event) -> bool:
    return event.value is not None and event.value.get("__op") == "r"


def _interleaved(events: list, made: list) -> bool:
    """Whether a snapshot read arrived after the first of the changes made while the snapshot ran."""
    first_change = min((i for i, e in enumerate(events) if not _snapshot_read(e)
                        and any(c.produced_by(e.value or {}, e.key, (e.value or {}).get("__op")) for c in made)),
                       default=None)
    return first_change is not None and any(_snapshot_read(e) for e in events[first_change:])


def _registry_outage(pipeline, oracle: Oracle) -> None:
    """Once Debezium has delivered the changes made since the last check, run the job once while the registry
    does not answer. A correct job stops that batch (RegistryUnavailable) without committing its offsets, and the
    next check's run lands it; a job that sets the batch aside and moves on leaves silver behind the source."""
    oracle.wait_delivered()
    try:
        summaries = pipeline.run_once_without_registry()
    except BatchFailed as exc:
        if "RegistryUnavailable" in exc.text:
            return
        raise
    if not any(summary.get("events") for summary in summaries):
        raise SandboxError("the job's run in the registry outage read no change, so it tested nothing",
                           "see the Kafka topics of the scenario's tables")


def _grow_topic(args: dict, pipeline, mutator: Mutator, oracle: Oracle) -> None:
    """Raise the partition count of the table's topic just far enough that one of its rows hashes to a new, empty
    partition, and update that row: Debezium writes the update there, at a smaller offset than the row's earlier
    events. Fails unless the update's event is found exactly so, since the step would otherwise test nothing."""
    table = args["table"]
    settings, topic = oracle.settings, pipeline.config.spec(table).topic
    bootstrap = settings.endpoint("kafka").address
    partitions, places = topics.key_places(bootstrap, oracle.registry, topic)
    count, mover = next(((count, place) for count, place in topics.movers(places, partitions)
                         if mutator.read_row(table, place.key) is not None), (None, None))
    if mover is None:
        raise SandboxError(f"no row of {table} moves to a partition added to {topic}'s {partitions}",
                           "grow the topic of a table with more rows")
    connector = _connector_of(table, settings, mutator)
    topics.grow(bootstrap, settings.url("connect"), connector, topic, count)
    ends = end_offsets(bootstrap, [topic])[topic]
    change = mutator.update(table, mover.key, _values(args["set"]))
    with ChangeReader(bootstrap, topic, oracle.registry, from_offsets=ends) as reader:
        event = reader.wait_for_change(change, oracle.timeout)[-1]
    moved_to = topics.partition_for(mover.key_bytes, count)
    if event.partition != moved_to or event.offset >= mover.offset:
        raise SandboxError(f"{topic}: the update of {mover.key} landed in partition {event.partition} at offset "
                           f"{event.offset}, not in the new partition {moved_to} below offset {mover.offset} (the "
                           f"row's last event, in partition {mover.partition})", "see `sandbox logs connect`")


def _change(mutator: Mutator, kind: str, args: dict) -> Change:
    table = args["table"]
    make = {
        "insert": lambda: mutator.insert(table, _values(args["row"])),
        "update": lambda: mutator.update(table, args["key"], _values(args["set"])),
        "delete": lambda: mutator.delete(table, args["key"]),
        "update_key": lambda: mutator.update_key(table, args["key"], args["new_key"]),
        "add_column": lambda: mutator.add_column(table, args["column"], args["type"], _values(args).get("default")),
        "drop_column": lambda: mutator.drop_column(table, args["column"]),
        "alter_column": lambda: mutator.alter_column(table, args["column"], args["type"]),
        "truncate": lambda: mutator.truncate(table),
    }
    return make[kind]()


def _typed(shape, column: str, value):
    """An expected value as the reader returns it: decimals exact, whatever YAML made of them; an instant with its
    offset as its UTC wall-clock time."""
    if value is not None and shape.table.column(column).type == DECIMAL:
        return Decimal(str(value))
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    if isinstance(value, RandomText):
        return value.text()
    return value


def _values(row: dict) -> dict:
    """YAML floats would lose cents: decimals are written as strings or numbers and kept exact."""
    return {k: Decimal(str(v)) if isinstance(v, float) else v.text() if isinstance(v, RandomText) else v
            for k, v in row.items()}


def _expect(step: Step, oracle: Oracle, entries: dict, time_travel: bool) -> None:
    """The check's explicit expectations, on the latest snapshot (now) or by time travel to its commit (later)."""
    label = step.args["label"]
    for table, spec in step.args["expect"].items():
        entry = entries[table]
        how = f"time travel to {entry.commit.instant}" if time_travel else "snapshot"
        keys = {tuple(_typed(entry.shape, k, row[k]) for k in entry.shape.table.primary_key)
                for kind in ("rows", "deleted", "absent") for row in spec.get(kind, [])}
        for reader in oracle.readers:
            rows = reader.as_of(entry.shape, entry.commit, keys) if time_travel else reader.snapshot(entry.shape, keys)
            problems = _unmet(entry.shape, spec, rows, oracle.hard_deletes(table))
            if problems:
                raise ExpectationUnmet(f"line {step.line}, check {label!r}, {table} ({reader.name}, {how}):\n"
                                       + "\n".join(line for _, _, line in problems),
                                       Finding("expectation", table, frozenset(c for _, c, _ in problems if c),
                                               frozenset(k for k, c, _ in problems if not c)))


def _unmet(shape, spec: dict, rows: dict, hard_deletes: bool = False) -> list[tuple[tuple, str | None, str]]:
    """(key, column or None for the whole row, line) for each expectation the rows miss. `deleted` keys are
    soft-deleted rows, or absent from every read when the job hard-deletes."""
    problems = []
    key_columns = shape.table.primary_key
    for expected in spec.get("rows", []):
        key = tuple(_typed(shape, k, expected[k]) for k in key_columns)
        actual = rows.get(key)
        if actual is None:
            found = "a deleted row" if key in rows else "none"
            problems.append((key, None, f"  key {key}: expected a live row, found {found}"))
            continue
        for column, value in expected.items():
            value = _typed(shape, column, value)
            got = actual[shape.columns.index(column)]
            if got != value:
                problems.append((key, column, f"  key {key}: column {column}: expected {value!r}, actual {got!r}"))
    for expected in spec.get("deleted", []):
        key = tuple(_typed(shape, k, expected[k]) for k in key_columns)
        if hard_deletes and key in rows:
            found = "a soft-deleted row" if rows[key] is None else "a live row"
            problems.append((key, None, f"  key {key}: expected no row (the job hard-deletes), found {found}"))
        elif not hard_deletes and (key not in rows or rows[key] is not None):
            found = "a live row" if key in rows else "none"
            problems.append((key, None, f"  key {key}: expected a soft-deleted row, found {found}"))
    for expected in spec.get("absent", []):
        key = tuple(_typed(shape, k, expected[k]) for k in key_columns)
        if rows.get(key) is not None:
            problems.append((key, None, f"  key {key}: expected no live row, found {rows[key]!r}"))
    return problems
