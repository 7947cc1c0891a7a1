"""The shipped scenarios on a project's own tables.

A shipped scenario is written on TICKIT's tables. Bound to a project, each of its tables (a role) is played by one of
the project's tables that has what the scenario asks of it: the columns whose values it sets or checks (each taken
by a column of the project's table that holds those values, or, for text, stand-ins the column can hold), NULL
where it leaves them NULL, the engine its steps need, one source for the tables a transaction writes, and no
reference to it where it truncates. The rest of its rows comes from the project's table: keys the loaded rows do not
use, and for every NOT NULL column the scenario does not name a value of its type (a referenced row's, for a
reference). The scenario is rewritten on those tables, so it validates, runs and reports as a file written for them.
A scenario no table can play is not applicable, and says what the tables lack.
"""

from __future__ import annotations

import copy
import os
import datetime as dt
import random
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation
from pathlib import Path

from cdc_sandbox.config import TOPOLOGY_FILE, Settings, load_topology, project_file
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.harness.checking.catches import ANY_COLUMN, ANY_READ
from cdc_sandbox.harness.checking.verdict import READ_CHECKS
from cdc_sandbox.harness.driving import scenario as scenarios
from cdc_sandbox.harness.driving.fuzz import fuzz_keys
from cdc_sandbox.schema import BOOL, DATE, DECIMAL, DOUBLE, FLOAT, INTEGER_RANGES, NUMBER, STR, TIMESTAMP, TIMESTAMPTZ, UUID
from cdc_sandbox.schema import Column, Table
from cdc_sandbox.sources.mutations import Mutator, random_value, unique_value

BINLOG = ("mariadb", "mysql")
# Engines each step needs of the table it names.
STEP_ENGINES = {"rewind_connector": BINLOG, "reset_connector": ("postgres",), "snapshot_table": ("postgres", *BINLOG)}
KINDS = {"integer": tuple(INTEGER_RANGES), "number": (DECIMAL, NUMBER, FLOAT, DOUBLE)}
# Kinds whose drawn values the readers return exactly as written (no float rounding, no text form of JSON or bytes):
# such a column may play a scenario's column of another kind, with stand-ins for its values.
STAND_IN_KINDS = ("integer", STR, DATE, TIMESTAMP, TIMESTAMPTZ, BOOL, UUID)
LOADED_KEYS = 8  # loaded rows a scenario may read (it names rows of TICKIT's it did not write)
NO_ENGINE = "no engine (its steps need engines that exclude each other)"
ADDED = "sandbox_"  # the columns a bound scenario adds are named so: apart from the table's own
NESTED = {"transaction": None, "snapshot_table": "while"}  # steps that hold changes: a list, or under this key


class NotApplicable(SandboxError):
    """The project has no tables that can play the scenario's; `reason` says what they lack."""

    def __init__(self, name: str, reason: str):
        super().__init__(f"scenario {name!r} does not apply to this project: {reason}",
                         "it runs on a project whose tables have what it needs (docs/guides/catalogue.md)")
        self.reason = reason


@dataclass(frozen=True)
class Candidate:
    """One of the project's tables, as a scenario's table may be bound to it."""

    name: str
    table: Table
    engine: str
    source: str
    referenced: bool = False  # another table's foreign key names it: it cannot be truncated
    references: dict = field(default_factory=dict)  # NOT NULL reference column -> a value naming an existing row
    loaded: tuple[tuple, ...] = ()  # keys of rows it holds (loaded ones), for a scenario that reads rows it did not write
    fixed_partitions: tuple[str, ...] = ()  # partition columns a row's update must not change (a bucket index)


@dataclass
class Role:
    """What a scenario asks of one of its tables."""

    name: str
    home: Table  # the table as the scenario was written for it
    home_engine: str
    engines: tuple[str, ...] = ()  # the engines it must be on (none: any)
    keys: list[tuple] = field(default_factory=list)  # the keys the scenario names, in order of first use
    written: set[tuple] = field(default_factory=set)  # ... those it gives or inserts (the others name loaded rows)
    values: dict[str, list] = field(default_factory=dict)  # each column it sets or checks -> the values it gives
    nulls: set[str] = field(default_factory=set)  # ... those it leaves NULL
    added: set[str] = field(default_factory=set)  # columns its steps add
    truncated: bool = False
    exact: bool = False  # its columns hold the file's values as they are: the scenario is about them

    def need(self, engines) -> None:
        both = tuple(e for e in self.engines if e in engines) if self.engines else tuple(engines)
        self.engines = both or (NO_ENGINE,)  # steps that need engines no one is


@dataclass
class Bound:
    """A role played by a project table."""

    role: Role
    target: Candidate
    keys: dict[tuple, dict]  # the scenario's key -> the target's
    columns: dict[str, str]  # the scenario's column -> the target's
    stand_ins: dict[str, dict]  # the scenario's column -> {a value its target cannot hold -> the one it holds}


# --- what a scenario asks ----------------------------------------------------------------------------------------
def _steps(steps: list) -> list[tuple[str, dict]]:
    """Every step as (kind, args), the changes a transaction or a snapshot's `while` holds included."""
    flat = []
    for step in steps:
        (kind, args), = step.items()
        flat.append((kind, args))
        if kind in NESTED:
            flat += _steps(args if NESTED[kind] is None else args[NESTED[kind]])
    return flat


def _expected(steps: list[tuple[str, dict]]):
    """(table, row) of every row a check expects."""
    for kind, args in steps:
        if kind == "check" and isinstance(args, dict):
            for table, spec in (args.get("expect") or {}).items():
                for row in spec.get("rows", []):
                    yield table, row


def roles(raw: dict, homes: dict[str, Table], home_engines: dict[str, str]) -> dict[str, Role]:
    """What each of the scenario's tables must have, read from its file."""
    found = {t: Role(t, homes[t], home_engines[t]) for t in raw["tables"]}
    steps = _steps(raw["steps"])
    for table, need in (raw.get("needs") or {}).items():
        if "engines" in need:
            found[table].need(need["engines"])
        found[table].exact = need.get("values") == "exact"
    for kind, args in steps:
        if kind in STEP_ENGINES:
            found[args["table"]].need(STEP_ENGINES[kind])
        if kind == "add_column":
            found[args["table"]].added.add(args["column"])
        if kind == "truncate":
            found[args["table"]].truncated = True
    if any(kind == "source_clock" and args is not None for kind, args in steps):
        for role in found.values():  # only a MySQL-compatible source stamps its changes with a clock it is given
            role.need(BINLOG)
    if raw.get("replica_identity"):
        for role in found.values():
            if role.home_engine == "postgres":
                role.need(("postgres",))
    if raw.get("source"):
        for role in found.values():
            role.need((role.home_engine,))
    checked = [(args["table"], c) for kind, args in steps if kind in ("update", "grow_topic") for c in args["set"]]
    checked += [(t, c) for t, row in _expected(steps) for c in row]
    checked += [(t, c) for t, s in (raw.get("silver") or {}).items() for c in s.get("partition_by", [])]
    checked += [(t, c) for t, row in _rows(raw, steps) for c, v in row.items() if isinstance(v, scenarios.RandomText)]
    checked += [(item["table"], item["column"]) for items in (raw.get("catches") or {}).values() for item in items
                if item.get("column") not in (None, ANY_COLUMN)]  # a column a broken job gets wrong: it is written
    for table, column in checked:  # in the file's order: the same binding in every run
        role = found[table]
        if column not in role.home.primary_key and column not in role.added:
            role.values.setdefault(column, [])
    for table, row in _rows(raw, steps):
        _note_row(found[table], row, full=True)
        found[table].written.add(tuple(row[c] for c in found[table].home.primary_key))
    for kind, args in steps:
        if kind == "update_key":
            found[args["table"]].written.add(tuple(args["new_key"][c] for c in found[args["table"]].home.primary_key))
    for kind, args in steps:
        role = found.get(args.get("table")) if isinstance(args, dict) else None
        for name in ("key", "new_key", "set"):
            if role and name in (args or {}):
                _note_row(role, args[name], full=False)
    for table, row in _expected(steps):
        _note_row(found[table], row, full=False)
    for kind, args in steps:
        if kind == "check" and isinstance(args, dict):
            for table, spec in (args.get("expect") or {}).items():
                for key in spec.get("deleted", []) + spec.get("absent", []):
                    _note_row(found[table], key, full=False)
    return found


def _rows(raw: dict, steps: list[tuple[str, dict]]):
    """(table, row) of every whole row: the given ones and those inserted."""
    for table, rows in (raw.get("given") or {}).items():
        for row in rows:
            yield table, row
    for kind, args in steps:
        if kind == "insert":
            yield args["table"], args["row"]


def _note_row(role: Role, row: dict, full: bool) -> None:
    if set(role.home.primary_key) <= set(row):
        key = tuple(row[c] for c in role.home.primary_key)
        if key not in role.keys:
            role.keys.append(key)
    for column, values in role.values.items():
        if column in row:
            values.append(row[column])
            if row[column] is None:
                role.nulls.add(column)
        elif full:
            role.nulls.add(column)  # left out of an inserted row: NULL


# --- who plays each role --------------------------------------------------------------------------------------
def bind(raw: dict, homes: dict[str, Table], home_engines: dict[str, str], candidates: list[Candidate]) -> dict:
    """The scenario (a file's mapping) rewritten on the project's tables; NotApplicable if none can play a role."""
    asked = roles(raw, homes, home_engines)
    for role in asked.values():  # a role no table can play, whatever plays the others, is named with each reason
        reasons = [f"{c.name}: {why}" for c in candidates if (why := _cannot_play(role, c, {}, []))]
        if len(reasons) == len(candidates):
            raise NotApplicable(str(raw["name"]), f"its table {role.name} needs {describe(role)}; "
                                                  + ("; ".join(reasons) or "the project has no tables"))
    together = _written_together(raw)
    chosen: dict[str, Bound] = {}

    def place(order: list[Role]) -> bool:
        if not order:
            return True
        role, rest = order[0], order[1:]
        for candidate in sorted(candidates, key=lambda c: (c.name != role.name, c.engine != role.home_engine)):
            if _cannot_play(role, candidate, chosen, together):
                continue
            chosen[role.name] = _bound(role, candidate, raw["name"])
            if place(rest):
                return True
            del chosen[role.name]
        return False

    if not place(list(asked.values())):
        raise NotApplicable(str(raw["name"]), f"its tables {', '.join(asked)} each need a table of their own"
                                              + (" (one source for the tables a transaction writes)" if together else "")
                                              + ", and the project's tables cannot play them all at once: "
                                              + "; ".join(f"{r.name} needs {describe(r)}" for r in asked.values()))
    return _rewritten(raw, chosen)


def describe(role: Role) -> str:
    """What a role needs, in a phrase."""
    needs = [f"a table on {' or '.join(role.engines)}" if role.engines else "a table"]
    for column, values in role.values.items():
        home = role.home.column(column)
        needs.append(f"a {'nullable ' if column in role.nulls else ''}column for {column} ({home.type})")
    if role.truncated:
        needs.append("no reference to it (it is truncated)")
    if role.exact:
        needs.append("its values as they are (no stand-ins of another type)")
    return ", ".join(needs)


def _written_together(raw: dict) -> list[set[str]]:
    """The tables each transaction writes: they must share a source database."""
    groups = []
    for kind, args in _steps(raw["steps"]):
        if kind == "transaction":
            groups.append({next(iter(change.values()))["table"] for change in args})
    return groups


def _cannot_play(role: Role, candidate: Candidate, chosen: dict[str, Bound], together: list[set[str]]) -> str:
    if any(b.target.name == candidate.name for b in chosen.values()):
        return "plays another of the scenario's tables"
    if role.engines and candidate.engine not in role.engines:
        return f"on {candidate.engine}"
    if role.truncated and candidate.referenced:
        return "another table references it, so it cannot be truncated"
    if any(fk.column in candidate.table.primary_key for fk in candidate.table.foreign_keys):
        return "its key references another table"
    if role.written and any(candidate.table.column(fk.column).unique and not candidate.table.column(fk.column).nullable
                            for fk in candidate.table.foreign_keys):
        return "a UNIQUE NOT NULL reference (one row per referenced row): the scenario's rows cannot share one"
    for group in together:
        if role.name in group:
            sources = {b.target.source for name, b in chosen.items() if name in group}
            if sources - {candidate.source}:
                return "not in the source of a table the scenario writes in the same transaction"
    if _target_keys(role, candidate) is None:
        read = len([key for key in role.keys if key not in role.written])
        return f"fewer rows than the {read} loaded ones the scenario reads, or fewer free keys than it writes"
    if _columns(role, candidate) is None:
        return "; ".join(f"no {'nullable ' if c in role.nulls else ''}column that holds {_sample(role, c)}"
                         for c in _unplaced(role, candidate))
    return ""


def _sample(role: Role, column: str) -> str:
    values = [v for v in dict.fromkeys(map(_hashable, role.values[column])) if v is not None][:3]
    return f"{column}'s values ({', '.join(map(str, values))})" if values else f"{column}'s NULLs"


def _hashable(value):
    return repr(value) if isinstance(value, (list, dict)) else value


def _target_keys(role: Role, candidate: Candidate) -> list[dict] | None:
    """A key of the target for each of the role's: the same ones on the table it was written for; else, for a key the
    scenario writes, one loaded rows do not use, and for one it only reads (a loaded row of its table), a loaded row's.
    None when the target has too few."""
    table = candidate.table
    if candidate.name == role.name and table.primary_key == role.home.primary_key and all(
            _holds(table.column(c), v) for key in role.keys for c, v in zip(table.primary_key, key)):
        return [dict(zip(table.primary_key, key)) for key in role.keys]
    free = iter([key for key in dict.fromkeys(fuzz_keys(table))
                 if all(_holds(table.column(c), v) for c, v in zip(table.primary_key, key))])
    loaded = iter(candidate.loaded)
    keys = [next(free if key in role.written else loaded, None) for key in role.keys]
    return None if None in keys else [dict(zip(table.primary_key, key)) for key in keys]


def _free_columns(role: Role, candidate: Candidate) -> list[Column]:
    """The target's columns a scenario's column may take: neither key, nor reference, nor UNIQUE, nor a partition
    key (their values are the table's own)."""
    table = candidate.table
    references = {fk.column for fk in table.foreign_keys}
    return [c for c in table.columns if c.name not in table.primary_key and c.name not in references
            and not c.unique and not c.partitions and not _added_by_a_scenario(c.name)
            and c.name not in candidate.fixed_partitions]


def _added_by_a_scenario(column: str) -> bool:
    """A column an earlier scenario or fuzz example added and left: the table's own columns play the scenario's."""
    return column.startswith((ADDED, "fuzz_"))


def _columns(role: Role, candidate: Candidate) -> dict[str, str] | None:
    """The scenario's columns -> distinct target columns that hold their values (the same name first, then the same
    type); None when there are none."""
    free = _free_columns(role, candidate)
    wanted = list(role.values)

    def assign(index: int, taken: dict[str, str]) -> dict[str, str] | None:
        if index == len(wanted):
            return dict(taken)
        column = wanted[index]
        home = role.home.column(column)
        for target in sorted(free, key=lambda c: (c.name != column, _kind(c) != _kind(home), c.type != home.type)):
            if target.name in taken.values() or not _can_take(role, column, target):
                continue
            taken[column] = target.name
            if found := assign(index + 1, taken):
                return found
            del taken[column]
        return None

    return assign(0, {})


def _unplaced(role: Role, candidate: Candidate) -> list[str]:
    free = _free_columns(role, candidate)
    return [c for c in role.values if not any(_can_take(role, c, target) for target in free)] or list(role.values)


def _can_take(role: Role, column: str, target: Column) -> bool:
    same_kind = _kind(target) == _kind(role.home.column(column))
    if not same_kind and (role.exact or _kind(target) not in STAND_IN_KINDS):
        return False
    if role.exact and any(not _holds(target, v) for v in role.values[column]):
        return False  # its values are the point: no stand-ins
    if column in role.nulls and not target.nullable:
        return False
    return _stand_ins(target, role.values[column], same_kind, column) is not None


def _kind(column: Column) -> str:
    """What a column's values mean: a count, a number, text, a date, ... whatever its width."""
    for kind, types in KINDS.items():
        if column.type in types:
            return kind
    return column.type


def _stand_ins(target: Column, values: list, same_kind: bool = True, salt: str = "") -> dict | None:
    """{value the column cannot hold -> a distinct one it can}, or None when some value has none. Text of the same
    kind is made to fit (an enum's labels, or the text cut to the column's length); values of another kind are
    stood in for by distinct values of the column's type (equal values by equal ones, NULL by NULL)."""
    distinct = [v for v in dict.fromkeys(map(_hashable, values)) if v is not None]
    misfits = [v for v in distinct if not (same_kind and _holds(target, v))]
    if not misfits:
        return {}
    if any(isinstance(v, scenarios.RandomText) for v in misfits):
        return None  # its length is the point
    if same_kind and target.type == STR and not target.form:
        return _text_stand_ins(target, distinct, misfits)
    if not same_kind and _kind(target) in STAND_IN_KINDS:
        return _drawn_stand_ins(target, distinct, misfits, salt)
    return None


def _text_stand_ins(target: Column, distinct: list, misfits: list) -> dict | None:
    if target.labels:
        unused = [label for label in target.labels if label not in distinct]
        return dict(zip(misfits, unused)) if len(unused) >= len(misfits) else None
    taken, stand_ins = set(distinct) - set(misfits), {}
    for number, value in enumerate(misfits):
        suffix = f"~{number}"
        if target.max_length <= len(suffix):
            return None
        stand_ins[value] = value[:target.max_length - len(suffix)] + suffix
        if stand_ins[value] in taken:
            return None
        taken.add(stand_ins[value])
    return stand_ins


def _drawn_stand_ins(target: Column, distinct: list, misfits: list, salt: str) -> dict | None:
    taken, stand_ins = {_hashable(v) for v in distinct if v not in misfits}, {}
    for value in misfits:
        rng = random.Random(f"{salt}:{target.name}:{value!r}")
        drawn = (_plain(random_value(replace(target, nullable=False), rng)) for _ in range(100))
        stand_ins[value] = next((v for v in drawn if _hashable(v) not in taken), None)
        if stand_ins[value] is None:
            return None
        taken.add(_hashable(stand_ins[value]))
    return stand_ins


def _holds(column: Column, value) -> bool:
    """Whether the column can hold the scenario's value as it is."""
    if value is None:
        return True
    if not scenarios.fits(column, value):
        return False
    if isinstance(value, scenarios.RandomText):
        return column.max_length is None or value.length <= column.max_length
    if column.type == STR and column.max_length is not None:
        return len(value) <= column.max_length
    if column.type in INTEGER_RANGES and column.limits:
        return column.limits[0] <= value <= column.limits[1]
    if column.type == DECIMAL and column.precision is not None:
        try:
            number = Decimal(str(value)).as_tuple()
        except InvalidOperation:
            return False
        scale = column.scale or 0
        return max(0, -number.exponent) <= scale and max(0, len(number.digits) + number.exponent) <= \
            column.precision - scale
    return True


def _bound(role: Role, candidate: Candidate, name: str) -> Bound:
    columns = _columns(role, candidate)
    targets = _target_keys(role, candidate)
    stand_ins = {c: _stand_ins(candidate.table.column(t), role.values[c],
                               _kind(candidate.table.column(t)) == _kind(role.home.column(c)), c)
                 for c, t in columns.items()}
    return Bound(role, candidate, dict(zip(role.keys, targets)), columns, stand_ins)


# --- the scenario on the bound tables ------------------------------------------------------------------------------
def _rewritten(raw: dict, chosen: dict[str, Bound]) -> dict:
    raw = copy.deepcopy(dict(raw))
    name = str(raw.get("name", ""))
    out = {k: v for k, v in raw.items() if k != "needs"}
    out["tables"] = [chosen[t].target.name for t in raw["tables"]]
    if raw.get("source"):
        out["source"] = chosen[raw["tables"][0]].target.source
    if raw.get("silver"):
        out["silver"] = {chosen[t].target.name: {**s, **({"partition_by": [chosen[t].columns[c] for c in s["partition_by"]]}
                                                          if "partition_by" in s else {})}
                         for t, s in raw["silver"].items()}
    if raw.get("given"):
        out["given"] = {chosen[t].target.name: [_row(chosen[t], row, name, full=True) for row in rows]
                        for t, rows in raw["given"].items()}
    out["steps"] = [_step(step, chosen, name) for step in raw["steps"]]
    if raw.get("catches"):
        out["catches"] = {variant: [_catch(item, chosen[item["table"]]) for item in items]
                          for variant, items in raw["catches"].items()}
    return out


def _catch(item: dict, bound: Bound) -> dict:
    """A failure a variant causes, on the bound table. The project's own columns and layout decide which of the
    oracle's reads meets a wrong value first and which column a wrong type shows in: a read's failure is any read's
    of the table, a type's any column's. Otherwise its column is the one that plays it (a key column by its place
    in the key), and its key the bound key."""
    if item["check"] in READ_CHECKS:
        return {"check": ANY_READ, "table": bound.target.name}
    if item["check"] == "types":
        return {"check": "types", "table": bound.target.name, "column": ANY_COLUMN}
    out = {**item, "table": bound.target.name}
    column, home_key, target_key = item.get("column"), bound.role.home.primary_key, bound.target.table.primary_key
    if column in bound.role.added:
        out["column"] = ADDED + column
    elif column in home_key and len(home_key) == len(target_key):
        out["column"] = target_key[home_key.index(column)]
    elif column in bound.columns and _kind(bound.target.table.column(bound.columns[column])) == _kind(
            bound.role.home.column(column)):
        out["column"] = bound.columns[column]
    elif column is not None:  # played by stand-ins of another kind, or not at all: what the bug breaks is elsewhere
        out["column"] = ANY_COLUMN
    if "key" in item:
        key = bound.keys.get(tuple(item["key"]))
        out.pop("key")
        if key is not None:
            out["key"] = list(key.values())
    return out


def _step(step: dict, chosen: dict[str, Bound], name: str) -> dict:
    (kind, args), = step.items()
    return scenarios.at_lines_of(step, {kind: _args(kind, args, chosen, name)})


def _args(kind: str, args, chosen: dict[str, Bound], name: str):
    if kind == "transaction":
        return [_step(change, chosen, name) for change in args]
    if kind == "check":
        return _check(args, chosen, name)
    if not isinstance(args, dict) or "table" not in args:
        return args
    bound = chosen[args["table"]]
    out = {**args, "table": bound.target.name}
    if "column" in args:
        out["column"] = ADDED + args["column"]
    for part in ("key", "new_key"):
        if part in args:
            out[part] = bound.keys[tuple(args[part][c] for c in bound.role.home.primary_key)]
    if "row" in args:
        out["row"] = _row(bound, args["row"], name, full=True)
    if "set" in args:
        out["set"] = _row(bound, args["set"], name, full=False)
    if kind == "snapshot_table":
        out["while"] = [_step(change, chosen, name) for change in args["while"]]
    return scenarios.at_lines_of(args, out)


def _check(args, chosen: dict[str, Bound], name: str):
    if not isinstance(args, dict):
        return args
    expect = {}
    for table, spec in (args.get("expect") or {}).items():
        bound = chosen[table]
        expect[bound.target.name] = {
            part: [_row(bound, row, name, full=False) for row in rows] for part, rows in spec.items()}
    return {**args, "expect": expect}


def _row(bound: Bound, row: dict, name: str, full: bool) -> dict:
    """A row (or a key, or the columns an update sets) of the scenario's table as its target's: the key mapped,
    each column it sets or checks under its target column (a stand-in for a value that column cannot hold), the
    columns the scenario adds as they are; a whole row also NULL for a checked column it leaves out, and a value for
    every other NOT NULL column of the target."""
    role, table = bound.role, bound.target.table
    out = {}
    if set(role.home.primary_key) <= set(row):
        out |= bound.keys[tuple(row[c] for c in role.home.primary_key)]
    for column, value in row.items():
        if column in role.added:
            out[ADDED + column] = value
        elif column in bound.columns:
            out[bound.columns[column]] = bound.stand_ins[column].get(_hashable(value), value)
    if full:
        out |= {bound.columns[c]: None for c in bound.columns if c not in row}
        rng = random.Random(f"{name}:{role.name}:{sorted(out.items(), key=str)}")
        key = {c: out[c] for c in table.primary_key}
        for column in table.columns:
            if column.nullable or column.name in out:
                continue
            if column.name in bound.target.references:
                out[column.name] = bound.target.references[column.name]
            elif column.unique:
                out[column.name] = _plain(unique_value(column, key, rng))
            else:
                out[column.name] = _plain(random_value(replace(column, nullable=False), rng))
    return out


def _plain(value):
    """A generated value as a scenario file writes it."""
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dt.time):
        return value.isoformat()
    return value


# --- the project's side --------------------------------------------------------------------------------------------
def candidates(settings: Settings, mutator: Mutator | None = None) -> list[Candidate]:
    """The project's tables as candidates (read from its sources: the sandbox must be up)."""
    mutator = mutator or Mutator(settings)
    topology = settings.topology
    placements = {t.name: mutator.placement(t.name) for t in topology.tables if mutator.holds(t.name)}
    referenced = {fk.references_table for p in placements.values() for fk in p.table.foreign_keys}
    found = []
    for name, p in placements.items():
        needed = [fk.column for fk in p.table.foreign_keys if not p.table.column(fk.column).nullable]
        references = {}
        if needed:
            row = mutator.new_row(name, random.Random(name))
            references = {column: row[column] for column in needed}
        source = topology.table(name).source
        harness_keys = {tuple(map(str, key)) for key in fuzz_keys(p.table)}
        loaded = tuple(tuple(map(_plain, key)) for key in mutator.first_keys(name, LOADED_KEYS + len(harness_keys))
                       if tuple(map(str, key)) not in harness_keys)[:LOADED_KEYS]
        found.append(Candidate(name, p.table, topology.sources[source].engine, source, name in referenced,
                               references, loaded, _fixed_partitions(topology.silver_of(name))))
    return found


def _fixed_partitions(silver) -> tuple[str, ...]:
    """The partition columns of a table whose index finds a row in its own partition only: a scenario's update of
    such a column would leave the row in its old partition too, as the project's layout says it must not change."""
    return () if silver.index == "global_simple" else silver.partition_by


def home_tables(raw: dict) -> tuple[dict[str, Table], dict[str, str]]:
    """The shipped scenario's tables as it was written for them (TICKIT's), and their engines."""
    topology = load_topology(TOPOLOGY_FILE)
    return ({t: scenarios.home_schema(t) for t in raw["tables"]},
            {t: topology.sources[topology.table(t).source].engine for t in raw["tables"]})


def is_bound(path: Path, topology) -> bool:
    """Whether the file runs bound: a shipped scenario on a project other than TICKIT."""
    return Path(path).resolve().parent == scenarios.SHIPPED.resolve() and not topology.is_tickit


def bound_raw(path: Path, settings: Settings, found: list[Candidate] | None = None) -> dict:
    """The shipped scenario's mapping rewritten on the project's tables (NotApplicable when none can play one)."""
    raw = scenarios.read(path)
    scenarios.validate(raw, path, home=True)
    homes, engines = home_tables(raw)
    return bind(raw, homes, engines, _candidates_of(settings) if found is None else found)


def load(path: Path, settings: Settings | None = None, found: list[Candidate] | None = None) -> scenarios.Scenario:
    """The scenario file as it runs on the project of `settings` (the environment's by default): bound to its tables
    where it is shipped, as written otherwise; NotApplicable when no table of the project can play one of its."""
    topology = settings.topology if settings else load_topology(project_file(os.environ))
    if not is_bound(path, topology):
        return scenarios.load(path, settings)
    settings = settings or Settings.load()
    return replace(scenarios.validate(bound_raw(path, settings, found), path, settings), bound=True)


_CANDIDATES: dict[Path, list[Candidate]] = {}  # read once per project in a process: a run binds every scenario


def _candidates_of(settings: Settings) -> list[Candidate]:
    if settings.topology.file not in _CANDIDATES:
        _CANDIDATES[settings.topology.file] = candidates(settings)
    return _CANDIDATES[settings.topology.file]
