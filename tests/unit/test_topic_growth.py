"""Where Kafka's default partitioner puts a key, and how far a topic must grow to move one to a new partition."""

from __future__ import annotations

import pytest

from cdc_sandbox.sources.topics import KeyPlace, movers, partition_for

# Kafka's own vectors for its murmur2 (clients' UtilsTest.testMurmur2), as signed Java ints.
JAVA_MURMUR2 = {b"21": -973932308, b"foobar": -790332482, b"a-little-bit-long-string": -985981536,
                b"a-little-bit-longer-string": -1486304829,
                b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971, b"abc": 479470107}


@pytest.mark.parametrize("key, java_hash", JAVA_MURMUR2.items())
def test_a_key_goes_where_the_java_producer_puts_it(key, java_hash):
    for partitions in (1, 2, 3, 7, 12, 100):
        assert partition_for(key, partitions) == (java_hash & 0x7FFFFFFF) % partitions


@pytest.mark.parametrize("partitions", [1, 2, 5, 12, 40])
def test_the_first_mover_needs_the_smallest_growth_and_moves_to_an_added_partition(partitions):
    places = [KeyPlace({"k": i}, key, 0, 5) for i, key in enumerate(JAVA_MURMUR2)]
    count, mover = next(movers(places, partitions))
    assert partition_for(mover.key_bytes, count) >= partitions
    assert not any(partition_for(p.key_bytes, smaller) >= partitions
                   for smaller in range(partitions + 1, count) for p in places)


def test_a_key_last_seen_at_offset_zero_cannot_move_below_it():
    places = [KeyPlace({"k": 1}, b"21", 0, 0)]
    assert list(movers(places, 1)) == []
