"""Reading Debezium's Avro value schemas (plain JSON, no Spark needed)."""

from __future__ import annotations

import json


def semantic_types(schema_json: str) -> dict[str, str]:
    """Field name -> Connect semantic name (`connect.name`, e.g. `io.debezium.time.MicroTimestamp`), where set."""
    found = {}
    for field in json.loads(schema_json).get("fields", []):
        for branch in field["type"] if isinstance(field["type"], list) else [field["type"]]:
            if isinstance(branch, dict) and branch.get("connect.name"):
                found[field["name"]] = branch["connect.name"]
    return found
