"""Rows generated for a whole schema: the order tables fill in, values inside CHECKs and partitions, keys and
references that hold."""

from __future__ import annotations

import datetime as dt
import random

from cdc_sandbox.config import CapturedTable
from cdc_sandbox.schema import DATE, INT, STR, TIMESTAMPTZ, Column, ForeignKey, Table
from cdc_sandbox.sources.mutations import random_value, same_key, unique_value
from cdc_sandbox.sources.project_data import generated_rows, reference_groups
from cdc_sandbox.stack.catalog import Placement, check_bounds


def placement(name: str, *references: str, key: str = "id", columns: tuple[Column, ...] = ()) -> Placement:
    table = Table(name, (Column(key, INT, nullable=False), *columns,
                         *(Column(f"{ref}_id", INT, nullable=False) for ref in references)), (key,),
                  tuple(ForeignKey(f"{ref}_id", ref, "id") for ref in references))
    return Placement(table, CapturedTable("mysql", "db", name), "mysql")


def test_tables_fill_after_what_they_reference_in_file_order_and_a_cycle_fills_together():
    """Sakila's shape: store and staff name each other; film_text (which film's trigger fills) comes after film as
    the file has it, though it references nothing."""
    tables = [placement("actor"), placement("address", "city"), placement("city", "country"), placement("country"),
              placement("customer", "store", "address"), placement("film", "language"), placement("film_text"),
              placement("language"), placement("staff", "store", "address"), placement("store", "staff", "address"),
              placement("node", "node")]
    groups = [[p.table.name for p in group] for group in reference_groups(tables)]
    assert groups == [["actor"], ["country"], ["city"], ["address"], ["staff", "store"], ["customer"],
                      ["language"], ["film"], ["film_text"], ["node"]]


def test_a_simple_check_bounds_an_integer_and_anything_else_says_nothing():
    assert check_bounds("CHECK (((VALUE >= 1901) AND (VALUE <= 2155)))", "release_year") == (1901, 2155)
    assert check_bounds("`rating` > 0 and `rating` < 11", "rating") == (1, 10)
    assert check_bounds("CHECK ((amount >= (0)::numeric))", "amount") == (0, None)
    assert check_bounds("CHECK (((x > 0) OR (x < -5)))", "x") == (None, None)
    assert check_bounds("CHECK ((char_length(name) > 2))", "name") == (None, None)
    assert check_bounds("CHECK ((other > 3))", "x") == (None, None)


def test_generated_values_fall_in_a_partition():
    month = Column("paid", TIMESTAMPTZ, nullable=False,
                   partitions=(("range", "2022-01-01 00:00:00+00", "2022-02-01 00:00:00+00"),
                               ("range", "2022-06-01 00:00:00+00", "2022-07-01 00:00:00+00")))
    listed = Column("region", STR, nullable=False, partitions=(("list", "eu", "us"), ("list", "apac")))
    two_listed = Column("shard", INT, nullable=False, partitions=(("list", "1", "5"),))
    open_ended = Column("day", DATE, nullable=False, partitions=(("range", None, "2020-01-01"),))
    rng = random.Random(3)
    paid = [random_value(month, rng) for _ in range(200)]
    assert all(dt.datetime(2022, 1, 1, tzinfo=dt.timezone.utc) <= p < dt.datetime(2022, 2, 1, tzinfo=dt.timezone.utc)
               or dt.datetime(2022, 6, 1, tzinfo=dt.timezone.utc) <= p < dt.datetime(2022, 7, 1, tzinfo=dt.timezone.utc)
               for p in paid)
    assert {p.month for p in paid} == {1, 6}
    assert {random_value(listed, rng) for _ in range(100)} == {"eu", "us", "apac"}
    assert {random_value(two_listed, rng) for _ in range(100)} == {1, 5}  # a list of two is no range
    assert all(dt.date(2019, 1, 1) <= random_value(open_ended, rng) < dt.date(2020, 1, 1) for _ in range(100))


def test_a_unique_reference_takes_each_referenced_row_once_and_a_unique_integer_comes_from_the_key():
    store = Table("store", (Column("id", INT, nullable=False), Column("manager_id", INT, nullable=False, unique=True),
                            Column("code", INT, nullable=False, unique=True)), ("id",),
                  (ForeignKey("manager_id", "staff", "id"),))
    rows = list(generated_rows(Placement(store, CapturedTable("mysql", "db", "store"), "mysql"), 10, 1,
                               {"staff": [{"id": n} for n in range(1, 11)]}))
    assert sorted(row["manager_id"] for row in rows) == list(range(1, 11))
    assert len({row["code"] for row in rows}) == 10
    assert unique_value(Column("n", "smallint", limits=(0, 255)), {"id": 300}, random.Random()) == 300 % 256


def test_a_journaled_timestamp_key_matches_its_events_key():
    micros = (dt.datetime(2022, 3, 8, 20, 34, 57, 209328) - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
    assert same_key({"paid": "2022-03-08T20:34:57.209328Z", "id": 1}, {"paid": "2022-03-08T22:34:57.209328+02:00",
                                                                        "id": 1})
    assert same_key({"at": micros}, {"at": "2022-03-08T20:34:57.209328"})
    assert same_key({"at": micros // 1000}, {"at": "2022-03-08T20:34:57.209000"})
    assert not same_key({"at": micros + 1}, {"at": "2022-03-08T20:34:57.209328"})
    assert not same_key({"paid": "2022-03-08T20:34:57Z"}, {"paid": "2022-03-08T20:34:58+00:00"})
