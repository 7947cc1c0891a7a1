"""The source data: TICKIT loaded into the databases, mutations with their journal, source positions, and the
change events Debezium writes to Kafka. Imports the stack and the core."""
