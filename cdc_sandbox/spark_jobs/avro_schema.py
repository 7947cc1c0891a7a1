"""Reading Debezium's Avro value schemas (plain JSON, no Spark needed)."""

from __future__ import annotations

import json

# Dates and times that Debezium carries as plain Avro numbers, by Connect semantic name: what the number counts from
# 1970-01-01. The harness (`cdc_sandbox/sources/changes.py`) and the job (`decode._typed_fields`) both convert from
# this table; a field that the Avro reader already gives as a date or time (an Avro logical type) is left as it is.
EPOCH_UNITS = {
    "io.debezium.time.Date": "days",
    "org.apache.kafka.connect.data.Date": "days",
    "io.debezium.time.Timestamp": "millis",
    "org.apache.kafka.connect.data.Timestamp": "millis",
    "io.debezium.time.MicroTimestamp": "micros",
    "io.debezium.time.NanoTimestamp": "nanos",
}

ZONED_TIMESTAMP = "io.debezium.time.ZonedTimestamp"  # an instant as ISO text with its offset
VARIABLE_SCALE_DECIMAL = "io.debezium.data.VariableScaleDecimal"  # {scale, value}: a decimal of any scale


def epoch_fields(schema_json: str) -> dict[str, str]:
    """Field name -> the unit of its number (`EPOCH_UNITS`), for the dates and times of a value schema."""
    return {name: EPOCH_UNITS[semantic] for name, semantic in semantic_types(schema_json).items()
            if semantic in EPOCH_UNITS}


def semantic_types(schema_json: str) -> dict[str, str]:
    """Field name -> Connect semantic name (`connect.name`, e.g. `io.debezium.time.MicroTimestamp`), where set."""
    found = {}
    for field in json.loads(schema_json).get("fields", []):
        for branch in field["type"] if isinstance(field["type"], list) else [field["type"]]:
            if isinstance(branch, dict) and branch.get("connect.name"):
                found[field["name"]] = branch["connect.name"]
    return found


def column_defaults(schema_json: str) -> dict[str, object]:
    """Field name -> its default, for the fields of a value schema whose default is not null: Debezium gives a
    column's DEFAULT to its field (the union then lists the type before null), which is what the rows a table held
    took when the column was added."""
    schema = json.loads(schema_json)
    fields = schema.get("fields", []) if isinstance(schema, dict) else []
    return {field["name"]: field["default"] for field in fields if field.get("default") is not None}


# The fields of Debezium's unflattened change event: what the connectors send for a truncate, which has no row to
# flatten. The job reads its schema (`is_envelope`), the harness its decoded value (`cdc_sandbox/sources/changes.py`).
ENVELOPE_FIELDS = frozenset({"op", "source", "before", "after"})


def is_envelope(schema_json: str) -> bool:
    """Whether a value schema is Debezium's unflattened change event (`ENVELOPE_FIELDS`)."""
    schema = json.loads(schema_json)
    names = {field["name"] for field in schema.get("fields", [])} if isinstance(schema, dict) else set()
    return ENVELOPE_FIELDS <= names
