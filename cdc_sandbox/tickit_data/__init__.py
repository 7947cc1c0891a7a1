"""TICKIT sample data: schema, deterministic generator and file reader."""

from .generator import (
    TableChecksum,
    TickitGenerator,
    build_manifest,
    canonical_row_text,
    canonical_row_text_formatter,
    generate_rows,
    row_formatter,
    scaled_row_counts,
    table_checksum,
    write_table_file,
    write_tickit_files,
)
from .reader import (
    TickitFormatError,
    iter_file_rows,
    iter_normalized_fields,
    iter_table_rows,
    read_tickit_directory,
)
from .schema import (
    ORIGINAL_ROW_COUNTS,
    RESERVED_TABLE_NAMES,
    TABLE_NAMES,
    TABLES,
    TickitTable,
    get_table,
    table_for_file,
)

__all__ = [
    "ORIGINAL_ROW_COUNTS",
    "RESERVED_TABLE_NAMES",
    "TABLE_NAMES",
    "TABLES",
    "TableChecksum",
    "TickitFormatError",
    "TickitGenerator",
    "TickitTable",
    "build_manifest",
    "canonical_row_text",
    "canonical_row_text_formatter",
    "generate_rows",
    "get_table",
    "iter_file_rows",
    "iter_normalized_fields",
    "iter_table_rows",
    "read_tickit_directory",
    "row_formatter",
    "scaled_row_counts",
    "table_checksum",
    "table_for_file",
    "write_table_file",
    "write_tickit_files",
]
