"""The PySpark job that turns Debezium change events into Hudi bronze and silver tables, and its query helpers."""
