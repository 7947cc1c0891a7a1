"""Where Kafka's default partitioner puts a key, and how far a topic must grow to move one to a new partition."""

from __future__ import annotations

import pytest

from cdc_sandbox.sources.topics import KeyPlace, last_but_one, movers, partition_for

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


class Stamped:
    """What `last_but_one` reads of a consumed message: its partition, offset and (type, milliseconds) timestamp."""

    def __init__(self, partition: int, offset: int, millis: int):
        self._place, self._millis = (partition, offset), millis

    def partition(self) -> int:
        return self._place[0]

    def offset(self) -> int:
        return self._place[1]

    def timestamp(self) -> tuple[int, int]:
        return 1, self._millis


def test_the_event_before_the_latest_is_found_by_time_across_partitions():
    """A key's history before the topic grew sits in partition 1, its newer events in partition 0: read partition
    by partition, the last-but-one would be an old event of partition 1."""
    newer = [Stamped(0, 7, 5_000), Stamped(0, 8, 6_000)]
    older = [Stamped(1, 40, 1_000), Stamped(1, 41, 2_000)]
    assert last_but_one(newer + older) is newer[0]
    assert last_but_one([Stamped(2, 3, 9_000), Stamped(2, 4, 9_000)]).offset() == 3  # one millisecond: by offset
