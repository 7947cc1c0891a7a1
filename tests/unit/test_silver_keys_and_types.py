"""The oracle's key and type checks: a key held twice and a column of another type are failures of their own, even
where every value compares equal (the row-by-row comparison keeps one version per key, and `1.5 == 1.50`)."""

from __future__ import annotations

import pyarrow as pa

from cdc_sandbox.harness.checking.silver import Shape, arrow_type, duplicate_keys, wrong_types
from cdc_sandbox.tickit_data.ddl import MYSQL, POSTGRES
from cdc_sandbox.tickit_data.schema import get_table

CATEGORY = Shape(get_table("category"))
SALE = Shape(get_table("sale"))


def category_batches(keys: list[int], commits: list[str], catid=pa.int32()) -> list:
    n = len(keys)
    return pa.table([pa.array(keys, catid), pa.array(["Shows"] * n), pa.array(["Opera"] * n),
                     pa.array(["desc"] * n), pa.array([None] * n, pa.string()), pa.array(commits)],
                    names=[*CATEGORY.columns, "__deleted", "_hoodie_commit_time"]).to_batches()


def test_a_key_held_twice_is_named_with_the_commits_that_hold_it():
    batches = category_batches([1, 2, 1, 3, 1], ["c1", "c1", "c3", "c1", "c2"])
    assert duplicate_keys(CATEGORY, batches) == {(1,): ["c1", "c2", "c3"]}


def test_distinct_keys_and_empty_reads_have_no_duplicates():
    assert duplicate_keys(CATEGORY, category_batches([1, 2, 3], ["c1", "c1", "c2"])) == {}
    assert duplicate_keys(CATEGORY, []) == {}


def sale_schema(**overrides) -> pa.Schema:
    fields = {column.name: arrow_type(column, MYSQL) for column in SALE.table.columns} | overrides
    return pa.schema(list(fields.items()) + [("_hoodie_commit_time", pa.string())])


def test_the_expected_types_pass():
    assert wrong_types(SALE, sale_schema(), MYSQL) == {}


def test_money_as_double_and_a_widened_integer_are_named():
    lines = wrong_types(SALE, sale_schema(pricepaid=pa.float64(), qtysold=pa.int64()), MYSQL)
    assert list(lines) == ["qtysold", "pricepaid"]
    assert "column qtysold (smallint in the source): expected int32, actual int64" in lines["qtysold"]
    assert "column pricepaid (decimal(8,2) in the source): expected decimal128(8, 2), actual double" in lines["pricepaid"]


def test_wider_decimal_and_timestamps_as_text_or_without_zone_are_named():
    for wrong in (pa.decimal128(38, 10), pa.string(), pa.timestamp("us"), pa.int64()):
        column = "pricepaid" if pa.types.is_decimal(wrong) else "saletime"
        assert len(wrong_types(SALE, sale_schema(**{column: wrong}), MYSQL)) == 1, wrong


def test_booleans_are_booleans_from_every_engine():
    """MySQL's tinyint(1) too: the connectors' converter makes it a boolean however the column was learned."""
    holiday = get_table("date").column("holiday")
    assert arrow_type(holiday, MYSQL) == pa.bool_()
    assert arrow_type(holiday, POSTGRES) == pa.bool_()


def test_a_column_the_read_lacks_or_holds_as_untyped_nulls_is_left_to_the_values():
    schema = pa.schema([(name, type_) for name, type_ in zip(sale_schema().names, sale_schema().types)
                        if name != "commission"])
    assert wrong_types(SALE, schema, MYSQL) == {}
    assert wrong_types(SALE, sale_schema(commission=pa.null()), MYSQL) == {}



def test_a_widened_column_passes_in_its_new_type_too_where_a_later_migration_widened_it():
    from dataclasses import replace

    from cdc_sandbox.sources.mutations import added_column

    shape = replace(SALE, widened=(added_column("qtysold", "bigint"),))
    assert wrong_types(shape, sale_schema(qtysold=pa.int64()), MYSQL) == {}
    assert list(wrong_types(shape, sale_schema(qtysold=pa.float64()), MYSQL)) == ["qtysold"]


def test_text_that_is_no_json_in_a_json_column_differs_from_every_document():
    from cdc_sandbox.schema import JSON, Column
    from cdc_sandbox.sources.normalize import NotJson, normalize_column

    values = normalize_column(Column("profile", JSON), ['{"a": 1}', '"abc"', "abc", "__debezium_unavailable_value"])
    assert values[:2] == [{"a": 1}, "abc"]
    assert values[2] == NotJson("abc") != "abc"
    assert values[3] == NotJson("__debezium_unavailable_value")
