"""Kafka's storage tool parses `--cluster-id -abc...` as a missing value: a cluster id never begins with '-'."""

from __future__ import annotations

import re

from cdc_sandbox.stack.services.kafka import cluster_id


def test_cluster_ids_are_url_safe_uuids_that_never_begin_with_a_dash():
    ids = [cluster_id() for _ in range(3000)]  # one in 64 random ids begins with '-'
    assert all(re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_-]{21}", value) for value in ids)
    assert len(set(ids)) == len(ids)
