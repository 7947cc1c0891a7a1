"""Apicurio Registry client and the Apicurio Avro wire format.

A message written by the Apicurio converter (ids in the payload, not in headers) is: one magic byte `0`, the
schema's 8-byte big-endian global id, then the Avro binary body. The schema is fetched from the registry by that
id and cached; schemas evolve, so each id keeps its own.
"""

from __future__ import annotations

import io
import json
import struct
from functools import lru_cache

import fastavro
import requests

from cdc_sandbox.errors import SandboxError

MAGIC_BYTE = 0
HEADER = struct.Struct(">bq")


class WireFormatError(ValueError):
    """The bytes are not an Apicurio-framed Avro message."""


class RegistryClient:
    def __init__(self, api_url: str):
        self.api_url = api_url.rstrip("/")

    @lru_cache(maxsize=1024)
    def schema_by_global_id(self, global_id: int) -> str:
        response = requests.get(f"{self.api_url}/ids/globalIds/{global_id}", timeout=10)
        if response.status_code == 404:
            raise SandboxError(f"schema with global id {global_id} is not in the registry at {self.api_url}",
                               "the message was written against another registry, or the registry lost its data")
        response.raise_for_status()
        return response.text

    @lru_cache(maxsize=1024)
    def parsed_schema(self, global_id: int):
        return fastavro.parse_schema(json.loads(self.schema_by_global_id(global_id)))

    def artifacts(self) -> list[str]:
        response = requests.get(f"{self.api_url}/search/artifacts", params={"limit": 1000}, timeout=10)
        response.raise_for_status()
        return [a["id"] for a in response.json()["artifacts"]]

    def decode(self, payload: bytes | None) -> tuple[int, dict] | None:
        """Decode one message value or key; returns (global id, record), or None for a tombstone."""
        return read_framed(payload, self.parsed_schema)


def read_framed(payload: bytes | None, parsed_schema) -> tuple[int, dict] | None:
    """An Apicurio-framed Avro message read with the schema `parsed_schema(global id)` gives: (global id, record), or
    None for a tombstone."""
    if payload is None:
        return None
    global_id = frame_global_id(payload)
    return global_id, fastavro.schemaless_reader(io.BytesIO(payload[HEADER.size :]), parsed_schema(global_id))


def frame_global_id(payload: bytes) -> int:
    if len(payload) < HEADER.size:
        raise WireFormatError(f"{len(payload)} bytes is shorter than the Apicurio header")
    magic, global_id = HEADER.unpack_from(payload)
    if magic != MAGIC_BYTE:
        raise WireFormatError(f"magic byte {magic} is not {MAGIC_BYTE}")
    return global_id
