"""The harness: the job under test and its lakes, silver read back, the oracle, scenarios and the pytest plugin.
Imports the sources, the stack and the core."""
