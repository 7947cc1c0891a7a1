"""The stack: the services (databases, Kafka, Connect, Apicurio, LocalStack), the two backends that run them, what
they need installed, and the clients of the source databases. Imports only the core (`config`, `errors`, `wait`)."""
