"""What a project's `debezium:` settings mean for what silver may hold, and which of them the harness follows.

Settings that shape a value (`decimal.handling.mode`, `binary.handling.mode`, `time.precision.mode`) are followed
column by column (`cdc_sandbox.stack.catalog.as_carried`). Those below decide which events reach the job at all; a value
the oracle cannot hold the pipeline to is refused when the project file is read, with the reason, rather than
turning into a false verdict later. Settings the job's decoding depends on belong to the sandbox.
"""

from __future__ import annotations

from pathlib import Path

from cdc_sandbox.errors import SandboxError

# setting -> {value: what silver holds under it}; a value not listed is refused with UNFOLLOWED's reason
FOLLOWED = {
    "snapshot.mode": {
        "initial": "rows present when the connector starts arrive as snapshot reads, then every change",
        "when_needed": "as initial; a snapshot again only when the offsets are lost",
        # The sandbox creates a project's tables and registers its connector before anything is loaded, so no row
        # predates the connector and skipping the snapshot loses nothing.
        "no_data": "changes only, from the connector's start",
        "never": "changes only, from the connector's start",
    },
    "tombstones.on.delete": {
        "true": "a delete is followed by a tombstone (a null value), which the job skips",
        "false": "a delete is its change event alone",
    },
    "transforms.unwrap.delete.tombstone.handling.mode": {
        "rewrite": "a delete arrives as the row's last values with __deleted=true",
        "rewrite-with-tombstone": "as rewrite, followed by a tombstone the job skips",
    },
    "skipped.operations": {"none": "every insert, update, delete and truncate reaches the job"},
    "event.processing.failure.handling.mode": {"fail": "an event the connector cannot process stops it"},
}
UNFOLLOWED = {
    "snapshot.mode": "the oracle compares silver with everything the source holds: `initial_only` stops after the "
                     "snapshot (no change reaches silver), `always` writes every row again at each connector start, "
                     "and the others decide per run",
    "transforms.unwrap.delete.tombstone.handling.mode": "deletes would reach the job as bare tombstones or not at "
                                                        "all, so silver would keep deleted rows live",
    "skipped.operations": "a skipped operation never reaches silver, which then differs from the source",
    "event.processing.failure.handling.mode": "an event the connector skips never reaches silver",
}
# Settings (or prefixes) that change which columns or values reach the job, and that the oracle does not model:
# silver would differ from the source by design. setting -> (why, what to do instead)
REFUSED = {
    "column.exclude.list": ("silver would lack the columns left out, and the oracle compares every column",
                            "capture every column of the project's tables (leave out a table with its `tables:` entry)"),
    "column.include.list": ("silver would lack the columns not listed, and the oracle compares every column",
                            "capture every column of the project's tables (leave out a table with its `tables:` entry)"),
    "message.key.columns": ("the job keys silver by each table's primary key or `record_key`, not the message key",
                            "give the table's key columns as `record_key` in its `tables:` entry"),
    "column.mask.": ("silver would hold masked values, not the source's", "remove the masking setting"),
    "column.truncate.to.": ("silver would hold cut values, not the source's", "remove the truncating setting"),
    "converters": ("a custom converter changes the values Debezium sends, which the oracle does not model",
                   "remove `converters` (the value modes, e.g. decimal.handling.mode, are followed)"),
}
# Settings the job's decoding and the sandbox's wiring depend on: the sandbox sets them.
OWNED_PREFIXES = ("connector.class", "topic.prefix", "database.", "slot.name", "publication.", "schema.include.list",
                  "table.include.list", "key.converter", "value.converter", "transforms", "predicates",
                  "schema.history.internal.")
# Settings a team may copy from its production connector although the sandbox sets them: the two that decide whether
# an explicit NULL reaches the job as NULL or as the column's DEFAULT (KAFKA-8713). The sandbox keeps NULL; a project
# that sets either to replace it gets silver holding the default, and the oracle's failure naming the column.
NULL_AS_DEFAULT = {"transforms.unwrap.replace.null.with.default": "true",
                   "value.converter.ignore.default.for.nullables": "false"}
OWNED_EXCEPTIONS = ("transforms.unwrap.delete.tombstone.handling.mode", *NULL_AS_DEFAULT)


def check(path: Path, source: str, debezium: dict[str, str]) -> None:
    """Refuse, naming the setting and why, a setting whose meaning the harness does not follow."""
    for setting, value in debezium.items():
        refused = refusal(setting, value)
        if refused:
            raise SandboxError(f"{path}: source {source} sets {refused[0]}", refused[1])


def refusal(setting: str, value: str) -> tuple[str, str] | None:
    """Why the harness cannot follow `setting: value`, and what to do instead; None when it can."""
    if setting.startswith(OWNED_PREFIXES) and setting not in OWNED_EXCEPTIONS:
        return (f"`{setting}`, which the sandbox sets itself (the job decodes what its converters and transforms "
                f"produce)", f"remove `{setting}` from the `debezium:` settings")
    refused = next((why for prefix, why in REFUSED.items() if setting == prefix or
                    (prefix.endswith(".") and setting.startswith(prefix))), None)
    if refused is not None:
        return f"`{setting}`: {refused[0]}", refused[1]
    followed = FOLLOWED.get(setting)
    if followed is not None and value not in followed:
        return (f"`{setting}: {value}`: {UNFOLLOWED[setting]}",
                "use one of: " + "; ".join(f"{v} ({meaning})" for v, meaning in followed.items()))
    return None


def as_settings(given: dict) -> dict[str, str]:
    """`debezium:` settings as Kafka Connect takes them: every value a string, YAML's booleans as true/false."""
    return {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in given.items()}
