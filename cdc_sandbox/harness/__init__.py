"""The harness, by role; it imports the sources, the stack and the core.

- `running`: the job under test (the built-in job or a team's), its Spark session or spark-submit, the lakes it
  writes for tests, and what its checkpoint and timeline say it did;
- `checking`: silver read back through both readers, the oracle and its verdicts, SQL over the metastore;
- `driving`: what drives a test: the pytest plugin, scenario files, the fuzzer.
"""
