"""Fuzzing: random sequences of source changes, played as scenarios against the sandbox and checked by the oracle.

Each example is a scenario (the format of `cdc_sandbox/fixtures/scenarios/`) drawn from the run's seed and its number: a few
rows given on one to three of the TICKIT tables, then batches of inserts, updates (NULLs and edge values among
them), deletes, key updates, bursts on one key, transactions over several tables of one source and an added column,
with job pauses (the changes in between reach the job in one micro-batch) and, when the job runs continuously,
restarts. Every key an example uses lies above TICKIT's keys (or is the largest its type holds) and is claimed by
the scenario, whose `given` resets it: examples touch no loaded row and do not depend on each other.

`Fuzzer.run` plays examples on one pipeline and one oracle until the budget is spent or one fails; `shrink` then
makes the failing example smaller, keeping each candidate that a fresh lake still fails the same way, and `write`
saves it as a scenario file that `sandbox scenario run` replays.
"""

from __future__ import annotations

import contextlib
import copy
import datetime as dt
import itertools
import random
import time
import uuid
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Callable

import yaml
from pyspark.errors import StreamingQueryException

from cdc_sandbox.errors import SandboxError
from cdc_sandbox.harness.driving import scenario as scenarios
from cdc_sandbox.harness.checking.verdict import Finding
from cdc_sandbox.schema import BIGINT, BOOL, BYTES, DATE, DECIMAL, INT, INTEGER_RANGES, JSON, NUMBER, SMALLINT, STR
from cdc_sandbox.schema import ARRAY, DOUBLE, FLOAT, INTERVAL, TIME, TIMESTAMP, TIMESTAMPTZ, TIMETZ, UUID, Column
from cdc_sandbox.schema import BIT_LAYOUTS, Table
from cdc_sandbox.sources.mutations import added_column, random_value
from cdc_sandbox.spark_jobs.failures import cause_line
from cdc_sandbox.tickit_data.ddl import MYSQL
from cdc_sandbox.tickit_data.schema import get_table

FUZZ_KEY_BASE = {SMALLINT: 30_000, INT: 2_000_000_000, BIGINT: 2**62}  # above every TICKIT key
FUZZ_KEYS_PER_TABLE = 24
# What an example's failure may be: a verdict of the oracle or a scenario, the harness giving up, the job crashing.
FAILURES = (AssertionError, SandboxError, StreamingQueryException)
# Mirrored below zero (where TICKIT has no key), away from the -1 a team's table may hold for "unknown".
FUZZ_NEGATIVE_KEYS = 6
# Few, one of each type `add_column` takes: the tables stop growing.
ADDED_COLUMNS = {"fuzz_note": "text", "fuzz_amount": "decimal", "fuzz_flag": "bool", "fuzz_day": "date",
                 "fuzz_at": "timestamp", "fuzz_count": "int"}
# The job's table settings for a whole run, drawn from its seed: the modes teams run, each a run of its own.
JOB_MODES = ({}, {"hard_deletes": True}, {"table_type": "MERGE_ON_READ", "compaction_delta_commits": 2},
             {"table_type": "MERGE_ON_READ", "compaction_delta_commits": 2, "hard_deletes": True})
CHANGE_WEIGHTS = {"insert": 3, "update": 5, "delete": 2, "update_key": 2, "burst": 1, "transaction": 1,
                  "add_column": 0.3}
# What production does to a pipeline besides changing rows, each drawn now and then in place of a change: a TRUNCATE
# (of tables small enough to be restored after the example), a source clock stepped back (binlog sources stamp
# changes with it), a column widened or dropped by a migration, a registry that does not answer for one run
# of the job, a binlog connector set back to an earlier position (a re-snapshot's old events after newer ones),
# a row's earlier event delivered again, and NULLs written into a column with a DEFAULT. (A topic's partitions are left alone: Kafka cannot take them back.)
INCIDENT_WEIGHTS = {"truncate": 0.25, "skew": 0.3, "widen": 0.15, "drop": 0.15, "outage": 0.2, "rewind": 0.2,
                    "redeliver": 0.3, "nulls": 0.2}
# A nullable column added with a DEFAULT, then given explicit NULLs: a converter or transform that reads fields with
# Kafka Connect's Struct.get writes the default for them (KAFKA-8713). type -> default
NULLABLE_DEFAULTS = {"bigint": 0, "text": "", "bool": True}
# Incidents that deliver a key's older event after a newer one was written. On Merge-on-Read the older event lands in
# a log file, and the readers' incremental queries return it with its old values as a change of the range: a known
# limit of those readers, which the scenarios old-event-redelivered and connector-offsets-rewound state too.
LATE_EVENTS = {"redeliver", "rewind"}
TRUNCATED_ROWS_MAX = 1_000  # a larger table is not truncated: the example restores every row it held
SKEWED_CLOCK = dt.datetime(2001, 9, 9, 1, 46, 40)
# Control characters too, but not NUL, which Postgres text cannot hold.
EDGE_TEXT = ["", " ", "e\u0301", "東京", "🎭", "'\";\\", "NULL", "a  b ", "tab\there", "two\nlines", "cr\r\n",
             "\x01\x1f\x7f", "\u200b\ufeff"]
# Sentinel values real databases hold (1000-01-01 is the earliest MySQL guarantees), either side of the Julian to
# Gregorian switch (1582-10-15) and of 1900, where Spark's Parquet calendar handling begins.
EDGE_DATES = [dt.date(1970, 1, 1), dt.date(1900, 1, 1), dt.date(2038, 1, 19), dt.date(2000, 2, 29),
              dt.date(2099, 12, 31), dt.date(1000, 1, 1), dt.date(1582, 10, 4), dt.date(1582, 10, 15),
              dt.date(1753, 1, 1), dt.date(1899, 12, 30)]
EDGE_TIMES = [dt.datetime(1970, 1, 1), dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
              dt.datetime(2038, 1, 19, 3, 14, 8), dt.datetime(2099, 12, 31, 23, 59, 59, 999999),
              dt.datetime(1000, 1, 1), dt.datetime(1582, 10, 4, 23, 59, 59, 999999),
              dt.datetime(1899, 12, 31, 23, 59, 59)]


def fuzz_keys(table: Table) -> list[tuple]:
    """The keys examples use in this table: for an integer key a range above TICKIT's, the largest its type holds
    and, for a signed one, a few of that range negated and the smallest it holds; for any other key values of each
    key column that loaded rows do not use (`fuzz-` text, the top of a number's range)."""
    columns = [table.column(name) for name in table.primary_key]
    if len(columns) == 1 and columns[0].type in FUZZ_KEY_BASE:
        kind, (smallest, largest) = columns[0].type, columns[0].value_range
        above = [*range(FUZZ_KEY_BASE[kind], FUZZ_KEY_BASE[kind] + FUZZ_KEYS_PER_TABLE), largest]
        below = [] if columns[0].unsigned else [-key for key in above[:FUZZ_NEGATIVE_KEYS]] + [smallest]
        return [(key,) for key in (*above, *below)]
    return [tuple(_key_part(column, number) for column in columns) for number in range(FUZZ_KEYS_PER_TABLE)]


def _key_part(column: Column, number: int):
    if column.type in INTEGER_RANGES:
        return column.value_range[1] - number
    if column.type == DECIMAL and column.unsigned and column.precision == 20 and column.scale == 0:  # bigint unsigned
        return str(2**64 - 1 - number)
    if column.type == DECIMAL:
        return str(Decimal(10 ** (column.precision - column.scale) - 1 - number))
    if column.type == UUID:
        return str(uuid.UUID(int=2**128 - 1 - number))
    if column.type == DATE:
        return dt.date(9999, 12, 31) - dt.timedelta(days=number)
    if column.type == STR and column.labels:
        return column.labels[number % len(column.labels)]
    return f"fuzz-{number}"[:column.max_length or 40]


def edge_value(column: Column, rng: random.Random):
    if column.form or column.partitions or (column.type == DECIMAL and column.limits) \
            or column.type in (TIME, TIMETZ, FLOAT, DOUBLE, INTERVAL, ARRAY):
        value = random_value(replace(column, nullable=False), rng)  # their edges are drawn with their grammar
        return value.isoformat() if isinstance(value, dt.time) else value  # as a scenario file writes it
    if column.type in INTEGER_RANGES:
        low, high = column.value_range
        return rng.choice([low, high, 0, 1 if low == 0 else -1])
    if column.type == DECIMAL and column.unsigned:
        largest = 2**64 - 1 if column.precision == 20 and column.scale == 0 else 10**column.precision - 1
        return rng.choice([Decimal(f"{largest}E-{column.scale}"), Decimal(0)])  # exact: scaleb rounds to 28 digits
    if column.type == NUMBER:
        return rng.choice([Decimal("0"), Decimal("-1E-20"), Decimal("123456789012345678901234567890.5"),
                           Decimal("1.000000000000000000001")])
    if column.type == JSON:
        return rng.choice([{}, [], {"ü": ["東京", None, 1.5, True]}, {"a": {"b": {"c": [1, [2, [3]]]}}},
                           '"text"'])  # a str is the column's JSON text: here a string
    if column.type == UUID:
        return rng.choice(["00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff"])
    if column.carried in BIT_LAYOUTS:  # a bit string as its number, as `mutations.random_value` gives it
        return rng.choice([0, 2 ** (column.bit_length or 64) - 1])
    if column.type == BYTES:
        return rng.choice([b"", b"\x00", bytes(range(256))[:32], b"\xff" * 16])
    if column.type == TIMESTAMPTZ:
        return rng.choice(EDGE_TIMES).replace(tzinfo=dt.timezone.utc)
    if column.type == STR and column.labels:
        return rng.choice(column.labels)
    if column.type == DECIMAL:
        largest = Decimal(f"{10 ** column.precision - 1}E-{column.scale}")  # exact: scaleb rounds to 28 digits
        return rng.choice([largest, largest.copy_negate(), Decimal("0.00"), Decimal("0.01"), Decimal("-0.01")])
    if column.type == DATE:
        return rng.choice(EDGE_DATES)
    if column.type == TIMESTAMP:
        return rng.choice(EDGE_TIMES)
    if column.type == BOOL:
        return rng.choice([True, False])
    longest = column.max_length or 300
    return rng.choice([*EDGE_TEXT, "ß" * longest])[:longest]


def fuzz_value(column: Column, rng: random.Random):
    """NULL (where allowed), an edge value or an ordinary one; decimals as strings, as a scenario file keeps them."""
    roll = rng.random()
    if column.nullable and roll < 0.15:
        return None
    value = edge_value(column, rng) if roll < 0.4 else random_value(column, rng)
    if value is None:  # random_value's own NULL
        return None
    return str(value) if isinstance(value, Decimal) else value


# --- drawing an example ----------------------------------------------------------------------------------------
@dataclass
class _Draw:
    rng: random.Random
    sources: dict[str, str]  # the example's tables -> the source database each lives in
    schemas: dict[str, Table]
    continuous: bool
    merge_on_read: bool = False
    number: int = 1
    seed: int = 0  # with `number`, names the example's own columns: no other run's example adds them
    small: frozenset[str] = frozenset()  # the tables few enough rows to truncate
    live: dict[str, set[tuple]] = field(default_factory=dict)
    added: dict[str, dict[str, Column]] = field(default_factory=dict)
    checks: list[str] = field(default_factory=list)  # the labels of the example's checks so far
    updated: dict[str, set[tuple]] = field(default_factory=dict)  # keys updated before the last check
    updated_since: dict[str, set[tuple]] = field(default_factory=dict)  # ... and since

    def row(self, table: str, key: tuple) -> dict:
        schema = self.schemas[table]
        return self.key(table, key) | {c.name: fuzz_value(c, self.rng) for c in schema.columns
                                       if c.name not in schema.primary_key}

    def free_key(self, table: str) -> tuple | None:
        free = [k for k in fuzz_keys(self.schemas[table]) if k not in self.live[table]]
        return self.rng.choice(free) if free else None

    def live_key(self, table: str) -> tuple | None:
        return self.rng.choice(sorted(self.live[table], key=str)) if self.live[table] else None

    def key(self, table: str, value: tuple) -> dict:
        return dict(zip(self.schemas[table].primary_key, value))

    def batch(self) -> list[dict]:
        one_micro_batch = self.rng.random() < 0.35
        steps = [{"pause": None}] if one_micro_batch else []
        for _ in range(self.rng.randint(1, 6)):
            steps += self.incident(paused=one_micro_batch) or [self.step()]
            if self.continuous and not one_micro_batch and self.rng.random() < 0.1:
                steps.append({"restart": None})
        if one_micro_batch:
            steps.append({"resume": None})
        elif not self.continuous and self.rng.random() < 0.5:
            steps.append({"run": None})
        return steps

    def check(self, label: str) -> dict:
        self.checks.append(label)
        for table, keys in self.updated_since.items():
            self.updated.setdefault(table, set()).update(keys)
        self.updated_since = {}
        return {"check": label}

    def incident(self, paused: bool) -> list[dict]:
        """Now and then, the steps of one of `INCIDENT_WEIGHTS` where the example allows it; else none."""
        if self.rng.random() >= sum(INCIDENT_WEIGHTS.values()) / (sum(CHANGE_WEIGHTS.values()) + 1):
            return []
        kind = self.rng.choices(list(INCIDENT_WEIGHTS), weights=list(INCIDENT_WEIGHTS.values()))[0]
        table = self.rng.choice(sorted(self.sources))
        binlog = self.sources[table] == MYSQL
        if kind == "truncate" and table in self.small:
            self.live[table] = set()
            return [{"truncate": {"table": table}}]
        if kind == "skew" and binlog and self.live[table]:
            return [{"source_clock": SKEWED_CLOCK}, self.change(table, "update"), {"source_clock": None}]
        if kind in ("widen", "drop") and self.live[table]:
            return self.migrate(table, widen=kind == "widen")
        if kind == "nulls" and self.live[table] and self.free_key(table) is not None:
            return self.nulls_in_a_column_with_a_default(table)
        if kind == "outage" and not (self.continuous or paused):
            return [self.change(table, "insert"), {"registry_outage": None}, {"run": None}]
        if kind in LATE_EVENTS and self.merge_on_read:
            return []
        if kind == "rewind" and binlog and self.checks and not paused:
            return [self.change(table, "insert"), {"rewind_connector": {"table": table, "to": self.checks[-1]}}]
        live_updated = sorted(self.updated.get(table, set()) & self.live[table], key=str)
        if kind == "redeliver" and live_updated:
            return [{"redeliver": {"table": table, "key": self.key(table, self.rng.choice(live_updated))}}]
        return []

    def migrate(self, table: str, widen: bool) -> list[dict]:
        """A column added, given a value (an integer's largest, then widened to bigint and given a larger one), and
        dropped again. The column is the example's own and gone from the source after it: a column dropped and
        added again later would hold values in silver that its source rows lost."""
        key = self.key(table, self.live_key(table))
        if not widen:
            name = f"fuzz_gone_{self.seed}_{self.number}"
            return [{"add_column": {"table": table, "column": name, "type": "text"}},
                    {"update": {"table": table, "key": key, "set": {name: "dropped next"}}},
                    {"drop_column": {"table": table, "column": name}}]
        name = f"fuzz_wide_{self.seed}_{self.number}"
        return [{"add_column": {"table": table, "column": name, "type": "int"}},
                {"update": {"table": table, "key": key, "set": {name: INTEGER_RANGES[INT][1]}}},
                {"alter_column": {"table": table, "column": name, "type": "bigint"}},
                {"update": {"table": table, "key": key, "set": {name: INTEGER_RANGES[BIGINT][1]}}},
                {"drop_column": {"table": table, "column": name}}]

    def nulls_in_a_column_with_a_default(self, table: str) -> list[dict]:
        """A nullable column added with a DEFAULT, a row inserted and a row updated with NULL in it, and the column
        dropped again (the example's own, as in `migrate`): silver must keep both NULLs, and the default in the rows
        the source gave it."""
        logical_type = self.rng.choice(sorted(NULLABLE_DEFAULTS))
        name, key, free = f"fuzz_default_{self.seed}_{self.number}", self.live_key(table), self.free_key(table)
        self.live[table].add(free)
        return [{"add_column": {"table": table, "column": name, "type": logical_type,
                                "default": NULLABLE_DEFAULTS[logical_type]}},
                {"insert": {"table": table, "row": self.row(table, free) | {name: None}}},
                {"update": {"table": table, "key": self.key(table, key), "set": {name: None}}},
                {"drop_column": {"table": table, "column": name}}]

    def step(self) -> dict:
        kind = self.rng.choices(list(CHANGE_WEIGHTS), weights=list(CHANGE_WEIGHTS.values()))[0]
        table = self.rng.choice(sorted(self.sources))
        if kind == "transaction":
            source = self.sources[table]
            together = [t for t in sorted(self.sources) if self.sources[t] == source]
            return {"transaction": [self.change(self.rng.choice(together), self.rng.choice(["insert", "update",
                                                                                            "delete", "update_key"]))
                                    for _ in range(self.rng.randint(2, 4))]}
        if kind == "burst":
            key = self.live_key(table)
            if key is None:
                return self.change(table, "insert")
            return {"transaction": [self.update(table, key) for _ in range(self.rng.randint(2, 3))]} \
                if self.rng.random() < 0.5 else self.update(table, key)
        if kind == "add_column":
            missing = [name for name in ADDED_COLUMNS if name not in self.added.setdefault(table, {})]
            if missing:
                name = self.rng.choice(missing)
                self.added[table][name] = added_column(name, ADDED_COLUMNS[name])
                return {"add_column": {"table": table, "column": name, "type": ADDED_COLUMNS[name]}}
            kind = "update"
        return self.change(table, kind)

    def change(self, table: str, kind: str) -> dict:
        """One change of this kind, or an insert where there is no live row to change (or no free key to move to)."""
        key, free = self.live_key(table), self.free_key(table)
        if kind == "insert" or key is None or (kind == "update_key" and free is None):
            if free is None:
                return self.update(table, key)
            self.live[table].add(free)
            return {"insert": {"table": table, "row": self.row(table, free)}}
        if kind == "delete":
            self.live[table].discard(key)
            return {"delete": {"table": table, "key": self.key(table, key)}}
        if kind == "update_key":
            self.live[table].discard(key)
            self.live[table].add(free)
            return {"update_key": {"table": table, "key": self.key(table, key), "new_key": self.key(table, free)}}
        return self.update(table, key)

    def update(self, table: str, key: tuple) -> dict:
        schema = self.schemas[table]
        columns = [c for c in schema.columns if c.name not in schema.primary_key]
        columns += list(self.added.get(table, {}).values())
        chosen = self.rng.sample(columns, k=min(len(columns), self.rng.randint(1, 3)))
        self.updated_since.setdefault(table, set()).add(key)
        return {"update": {"table": table, "key": self.key(table, key),
                           "set": {c.name: fuzz_value(c, self.rng) for c in chosen}}}


def job_mode(seed: int) -> dict:
    """The table settings of every example of the run with this seed (and of the pipeline that plays them)."""
    return JOB_MODES[random.Random(f"{seed}:mode").randrange(len(JOB_MODES))]


def draw_example(seed: int, number: int, sources: dict[str, str], schemas: dict[str, Table] | None = None,
                 small: frozenset[str] = frozenset()) -> dict:
    """Example `number` of the run with this seed, as a scenario (a dict in the file format). `sources` maps every
    table that may be chosen to the source database it lives in (a transaction stays in one); `schemas` gives their
    columns and keys (TICKIT's by default); `small` names the tables an example may truncate."""
    rng = random.Random(f"{seed}:{number}")
    tables = sorted(rng.sample(sorted(sources), k=rng.randint(1, min(3, len(sources)))))
    schemas = schemas or {table: get_table(table) for table in tables}
    draw = _Draw(rng, {t: sources[t] for t in tables}, {t: schemas[t] for t in tables}, continuous=rng.random() < 0.5,
                 merge_on_read=job_mode(seed).get("table_type") == "MERGE_ON_READ", number=number,
                 seed=seed, small=frozenset(small))
    given = {}
    for table in tables:
        keys = rng.sample(fuzz_keys(schemas[table]), k=rng.randint(1, 3))
        draw.live[table] = set(keys)
        given[table] = [draw.row(table, key) for key in keys]
    steps = []
    batches = rng.randint(1, 4)
    for number_in_example in range(1, batches + 1):
        steps += draw.batch()
        if number_in_example == batches or rng.random() < 0.5:
            steps.append(draw.check(f"batch {number_in_example}"))
    return {"name": f"fuzz seed {seed} example {number}",
            "description": f"Drawn by the fuzzer (seed {seed}, example {number}).",
            "tables": tables, "job": {**job_mode(seed), **({"continuous": True} if draw.continuous else {})},
            "given": given,
            "steps": steps}


# --- files -----------------------------------------------------------------------------------------------------
def write(raw: dict, path: Path, settings=None) -> scenarios.Scenario:
    """Write the example as a scenario file and read it back as `sandbox scenario run` will (so it validates against
    the tables of `settings`' project, the environment's by default)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True, width=120), encoding="utf-8")
    return scenarios.load(path, settings)


def sequence(raw: dict) -> str:
    """The example's steps, one per line, as they read in its file."""
    return yaml.safe_dump(raw["steps"], sort_keys=False, allow_unicode=True, width=200,
                          default_flow_style=None).rstrip()


@dataclass(frozen=True)
class Signature:
    """What kind of failure this is: the error's class and, for a verdict on silver, the check, the table and the
    columns whose values differ (the keys are left out: a smaller example fails at fewer of them)."""

    kind: str
    check: str = ""
    table: str = ""
    columns: frozenset[str] = frozenset()

    def covers(self, other: "Signature") -> bool:
        """Whether `other` is this failure or a narrower one: the same class, check and table, and only columns this
        one names (an example that fails at another column shows another bug)."""
        return ((self.kind, self.check, self.table) == (other.kind, other.check, other.table)
                and other.columns <= self.columns and bool(other.columns) == bool(self.columns))

    def __str__(self) -> str:
        return f"{self.kind}: {Finding(self.check, self.table, self.columns)}" if self.check else self.kind


def signature(error: BaseException) -> Signature:
    """What kind of failure this is, whether raised by a step of the fuzzer's run or of a scenario's."""
    while isinstance(error, scenarios.ScenarioError) and error.__cause__ is not None:
        error = error.__cause__
    finding = getattr(error, "finding", None)
    if finding is None:
        return Signature(type(error).__name__)
    return Signature(type(error).__name__, finding.check, finding.table, frozenset(finding.columns))


# --- running ---------------------------------------------------------------------------------------------------
@dataclass
class Budget:
    """Examples until `minutes` have passed (a started example finishes), or a fixed number of `examples`."""

    minutes: float | None = None
    examples: int | None = None
    started: float = field(default_factory=time.monotonic)

    def spent(self, done: int) -> bool:
        if self.examples is not None:
            return done >= self.examples
        return time.monotonic() - self.started >= self.minutes * 60

    def describe(self, done: int) -> str:
        if self.examples is not None:
            return f"{self.examples - done} examples left"
        left = max(0.0, self.minutes * 60 - (time.monotonic() - self.started))
        return f"{int(left // 60)} min {int(left % 60)} s left"


@dataclass
class Failure:
    raw: dict
    error: BaseException
    number: int


class Fuzzer:
    """Plays examples on one pipeline over every table, checked by one oracle, each as `scenario.run` would."""

    def __init__(self, pipeline, oracle, mutator, seed: int, workdir: Path, say=lambda line: None):
        self.pipeline, self.oracle, self.mutator, self.seed = pipeline, oracle, mutator, seed
        self.workdir, self.say = workdir, say
        mode = job_mode(seed)
        wanted = (mode.get("table_type", "COPY_ON_WRITE"), mode.get("hard_deletes", False))
        if (pipeline.config.table_type, pipeline.config.hard_deletes) != wanted:
            raise SandboxError(f"the examples of seed {seed} run on a job with {mode or 'the default settings'}; "
                               f"this pipeline's are {pipeline.config.table_type}, hard deletes "
                               f"{pipeline.config.hard_deletes}", "create the pipeline with `fuzz.job_mode(seed)`")
        self.sources = {spec.table: mutator.placement(spec.table).dialect for spec in pipeline.config.tables}
        self.schemas = {table: mutator.placement(table).table for table in self.sources}
        self.small = frozenset(t for t in self.sources if mutator.row_count(t) <= TRUNCATED_ROWS_MAX)
        self.examples = 0

    def run(self, budget: Budget) -> Failure | None:
        for number in itertools.count(1):
            if budget.spent(self.examples):
                return None
            raw = draw_example(self.seed, number, self.sources, self.schemas, self.small)
            spec = write(raw, self.workdir / "example.yaml", self.mutator.settings)
            rounds = self.oracle.rounds
            try:
                self.play(spec)
            except FAILURES as exc:
                return Failure(raw, exc, number)
            self.examples += 1
            self.say(f"fuzz: example {number} passed ({', '.join(spec.tables)}; {len(spec.steps)} steps, "
                     f"{self.oracle.rounds - rounds} rounds checked); {self.examples} examples and "
                     f"{self.oracle.rounds} rounds so far, {budget.describe(self.examples)}")

    def play(self, spec: scenarios.Scenario) -> None:
        """The example as `sandbox scenario run` plays it, on the run's one lake: only the history its rounds added
        is verified, and then forgotten."""
        if not spec.job.get("continuous"):
            self.pipeline.stop_continuous()
        scenarios.run(spec, self.pipeline, self.mutator, self.oracle,
                      verify=lambda: self.oracle.verify_and_forget(spec.tables))

    def clear(self) -> None:
        """Delete the rows examples left at their keys, through the source, and check that silver follows (and
        the rows the last example's truncates put back)."""
        deleted = delete_rows(self.mutator, list(self.sources))
        if deleted or self.mutator.journal.since(self.oracle.next_seq, self.oracle.topics):
            self.oracle.round("examples' rows deleted")


def delete_rows(mutator, tables: list[str]) -> bool:
    """Delete, through the source, the rows examples left at their keys in these tables; whether there were any."""
    deleted = False
    for table in tables:
        schema = mutator.placement(table).table
        for value in fuzz_keys(schema):
            key = dict(zip(schema.primary_key, value))
            if mutator.read_row(table, key) is not None:
                mutator.delete(table, key)
                deleted = True
    return deleted


class Replay:
    """Whether an example, run as a scenario on a fresh lake (branched from `branches` unless None), fails the way
    the fuzzer's failure did (`wanted`, a `Signature` that covers the example's). The lake's job first runs once
    over what the branch lacks; the scenario then runs inside `around()` (a harness test breaks the job there)."""

    def __init__(self, settings, spark, branches, mutator, timeout: float, wanted: Signature, workdir: Path,
                 around=contextlib.nullcontext):
        self.settings, self.spark, self.branches, self.mutator = settings, spark, branches, mutator
        self.timeout, self.wanted, self.workdir, self.around = timeout, wanted, workdir, around

    def __call__(self, raw: dict) -> bool:
        from cdc_sandbox.harness.running.lakes_for_tests import finish, pipeline_on_new_lake
        from cdc_sandbox.harness.checking.oracle import Oracle

        try:
            spec = write(raw, self.workdir / "candidate.yaml", self.settings)
        except scenarios.ScenarioError:
            return False  # e.g. a column set, and the step that added it taken out
        options = scenarios.pipeline_options(spec, spec.job)
        pipe = pipeline_on_new_lake(self.settings, self.spark, self.branches, only=spec.tables, **options)
        try:
            pipe.run_once()
            with self.around():
                scenarios.run(spec, pipe, self.mutator, Oracle(self.settings, pipe, self.mutator, timeout=self.timeout))
        except FAILURES as exc:
            return self.wanted.covers(signature(exc))
        finally:
            finish([pipe], failed=False)
        return False

    def primary_keys(self, tables: list[str]) -> dict[str, tuple[str, ...]]:
        return {table: self.mutator.placement(table).table.primary_key for table in tables}


@dataclass
class Found:
    raw: dict  # the smallest failing example found
    path: Path  # its scenario file
    reproduced: bool  # whether a fresh lake failed the same way
    message: str


def settle(failure: Failure, replay: Replay, deadline: float, reports: Path, seed: int, say=lambda line: None,
           most_shrinks: int | None = None) -> Found:
    """Shrink a failure (when a fresh lake reproduces it) until `deadline` or `most_shrinks` smaller examples, and
    write it out as a scenario file."""
    reproduced = replay(failure.raw)
    keys = replay.primary_keys(failure.raw["tables"])
    smallest = shrink(failure.raw, replay, deadline, say, most_shrinks, keys) if reproduced else failure.raw
    kind = signature(failure.error)
    first_line = cause_line(failure.error)
    path = reports / f"seed-{seed}-example-{failure.number}.yaml"
    write({**smallest, "description": f"Found by the fuzzer (seed {seed}, example {failure.number}): {kind}: "
                                      f"{first_line}"}, path, replay.settings)
    how = (f"shrunk from {len(failure.raw['steps'])} to {len(smallest['steps'])} steps, each kept one failing the "
           f"same way on a fresh lake" if reproduced else
           "NOT reproduced on a fresh lake (it may depend on the examples before it), so written as drawn")
    message = (f"fuzz example {failure.number} (seed {seed}) failed with {kind}; {how}.\n"
               f"Replay it: sandbox scenario run {path}\n"
               f"Keep it as a regression test: copy it into cdc_sandbox/fixtures/scenarios/.\n\n"
               f"{sequence(smallest)}\n\nThe failure:\n{failure.error}")
    return Found(smallest, path, reproduced, message)


# --- shrinking -------------------------------------------------------------------------------------------------
def shrink(raw: dict, reproduces: Callable[[dict], bool], deadline: float, say=lambda line: None,
           most_shrinks: int | None = None, keys: dict[str, tuple[str, ...]] | None = None) -> dict:
    """A smaller example that `reproduces` still fails the same way: chunks of steps removed (halves, then smaller),
    pauses lifted, changes taken out of transactions, given rows no step names dropped, unused tables, values made
    plain; after each success the ways are tried again. Stops at `deadline` (a `time.monotonic()` value) or after
    `most_shrinks` successes, with the smallest so far. `keys` gives each table's key columns (the project's tables
    as the environment's file declares them by default)."""
    keys = keys or _DeclaredKeys()
    best, improved, shrinks = raw, True, 0
    while improved and shrinks != most_shrinks:
        improved = False
        for candidate in itertools.chain(*(way(best, keys) for way in SHRINKS)):
            if time.monotonic() >= deadline:
                return best
            if reproduces(candidate):
                say(f"fuzz: shrunk to {len(candidate['steps'])} steps")
                best, improved, shrinks = candidate, True, shrinks + 1
                break
    return best


class _DeclaredKeys(dict):
    """Each table's key columns as the environment's project declares them, read as asked."""

    def __missing__(self, table: str) -> tuple[str, ...]:
        self[table] = scenarios.table_schema(table).primary_key
        return self[table]


def _with_steps(raw: dict, steps: list) -> dict:
    return {**raw, "steps": steps}


def _without_chunks(raw: dict, keys=None):
    """The example without one chunk of its steps (the final check stays), largest chunks first."""
    body, final = raw["steps"][:-1], raw["steps"][-1]
    size = len(body)
    while size >= 1:
        for start in range(0, len(body), size):
            steps = body[:start] + body[start + size:]
            if _well_formed(steps):
                yield _with_steps(raw, [*steps, final])
        size //= 2


def _without_pauses(raw: dict, keys=None):
    """The example without one pause and its resume (the changes between reach the job as they come)."""
    steps = raw["steps"]
    for start, step in enumerate(steps):
        if "pause" in step:
            end = next(i for i in range(start, len(steps)) if "resume" in steps[i])
            yield _with_steps(raw, steps[:start] + steps[start + 1:end] + steps[end + 1:])


def _well_formed(steps: list) -> bool:
    """Pauses and resumes alternate and the job is not left paused (a check while paused could never pass)."""
    paused = False
    for step in steps:
        kind = next(iter(step))
        if kind in ("pause", "resume"):
            if paused == (kind == "pause"):
                return False
            paused = kind == "pause"
        elif kind in ("check", "run", "restart") and paused:
            return False
    return not paused


def _smaller_transactions(raw: dict, keys=None):
    for index, step in enumerate(raw["steps"]):
        if "transaction" not in step:
            continue
        changes = step["transaction"]
        for drop in range(len(changes)):
            rest = changes[:drop] + changes[drop + 1:]
            replacement = rest[0] if len(rest) == 1 else {"transaction": rest}
            yield _with_steps(raw, raw["steps"][:index] + [replacement] + raw["steps"][index + 1:])


def _named_keys(raw: dict, keys: dict) -> set[tuple[str, tuple]]:
    found = set()
    for step in raw["steps"]:
        for change in step.get("transaction") or [step]:
            (args,) = change.values()
            if isinstance(args, dict) and "table" in args:
                for key in ("key", "new_key", "row"):
                    if key in args:
                        found.add((args["table"], _key_of(keys[args["table"]], args[key])))
    return found


def _key_of(key_columns: tuple[str, ...], row: dict) -> tuple:
    return tuple(row[k] for k in key_columns)


def _fewer_given_rows(raw: dict, keys: dict):
    named = _named_keys(raw, keys)
    for table, rows in raw["given"].items():
        for index, row in enumerate(rows):
            if (table, _key_of(keys[table], row)) not in named:
                yield {**raw, "given": {**raw["given"], table: rows[:index] + rows[index + 1:]}}


def _fewer_tables(raw: dict, keys: dict):
    used = {table for table, _ in _named_keys(raw, keys)}
    used |= {args["table"] for step in raw["steps"] for args in step.values()
             if isinstance(args, dict) and "table" in args}
    for table in raw["tables"]:
        if table not in used and len(raw["tables"]) > 1:
            given = {t: rows for t, rows in raw["given"].items() if t != table}
            yield {**raw, "tables": [t for t in raw["tables"] if t != table], "given": given}


def plainest(value):
    """The plainest value of `value`'s kind (a time keeps its zone), or `value` itself for a kind without one."""
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float, Decimal)):
        return type(value)(0)
    if isinstance(value, dt.datetime):
        return dt.datetime(2008, 1, 1, tzinfo=value.tzinfo)
    if isinstance(value, dt.date):
        return dt.date(2008, 1, 1)
    if isinstance(value, str):
        return "x"
    if isinstance(value, bytes):
        return b"x"
    if isinstance(value, (dict, list)):
        return type(value)()
    return value


def _simpler_values(raw: dict, keys: dict):
    """Each value an insert or an update writes (keys aside) replaced by the plainest of its kind, one at a time: the
    values the failure needs stay as drawn."""
    for index, step in enumerate(raw["steps"]):
        for position, change in enumerate(step.get("transaction") or [step]):
            kind, args = next(iter(change.items()))
            field = {"insert": "row", "update": "set"}.get(kind)
            if not isinstance(args, dict) or field not in args:
                continue
            for column, value in args[field].items():
                plain = plainest(value)
                if column in keys[args["table"]] or (type(plain) is type(value) and plain == value):
                    continue
                simpler = copy.deepcopy(raw)
                target = simpler["steps"][index]
                target = target["transaction"][position] if "transaction" in target else target
                target[kind][field][column] = plain
                yield simpler


SHRINKS = (_without_chunks, _without_pauses, _smaller_transactions, _fewer_given_rows, _fewer_tables,
           _simpler_values)
