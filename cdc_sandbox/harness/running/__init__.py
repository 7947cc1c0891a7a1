"""Running the job under test: the built-in job or a team's, in a Spark session or by spark-submit, on the sandbox's
lake or a test lake branched from a baseline; its checkpoint and its commit timeline read from outside."""
