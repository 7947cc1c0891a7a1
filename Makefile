# The sandbox's entry points. Each target installs what it needs first (idempotently).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: up down status test check fuzz bench clean venv compose-cli ci-linters broken-variants docs

venv: $(STAMP)

# The repository's own environment is the lock's (uv.lock: every package at the version CI ran), with every extra.
# uv installs from its cache by links and byte-compiles what it installs: the suite starts many Python processes, and
# where PYTHONDONTWRITEBYTECODE is set nothing else writes bytecode, so each would compile pyspark's and boto's modules
# again. It tries its cache alone first: PyPI ships pyspark as a source archive, and online uv rebuilds it whenever the
# index answers a revalidation with a changed response; a cache that lacks something goes online.
# `--inexact` keeps uv itself, which the lock does not list; `pip check` proves the result consistent.
UV_VERSION := 0.13.9
UV_SYNC := $(BIN)/uv sync -q --frozen --all-extras --inexact --compile-bytecode

$(STAMP): pyproject.toml uv.lock
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check --no-compile uv==$(UV_VERSION)
	$(UV_SYNC) --offline 2>/dev/null || $(UV_SYNC)
	$(BIN)/python -m pip check -q --disable-pip-version-check
	@touch $@

# Docker Compose pinned and built from its Go module into ~/.cache/cdc-sandbox, once per machine (validates cdc_sandbox/compose/ without an engine).
compose-cli: venv
	$(BIN)/python -m cdc_sandbox.stack.backends.compose_cli

up: venv
	$(BIN)/sandbox up

down: venv
	$(BIN)/sandbox down

status: venv
	$(BIN)/sandbox status

# The full suite: TICKIT's end-to-end tests, with the example projects' and the unit tests beside them in pytests of
# their own (tests/full_suite.py; PYTEST_ARGS go to TICKIT's run). It leaves out the smoke round (`make check`'s):
# the oracle suites' rounds over all seven tables check everything it checks.
# On a new machine the installs run side by side (the Compose build, `sandbox up`'s packages, jars and LocalStack,
# the CI linters); Compose's Go build is the largest part.
test: venv
	@$(MAKE) --no-print-directory -j3 --output-sync=line compose-cli up ci-linters
	$(BIN)/python -m tests.full_suite $(PYTEST_ARGS)

# The quick tier for the laptop loop: unit tests and one oracle round on every table.
check: venv
	$(BIN)/sandbox up
	$(BIN)/python -m pytest tests/unit tests/e2e/test_smoke.py --durations=10 $(PYTEST_ARGS)

# Random change sequences over every table for FUZZ_MINUTES (a new seed each run unless FUZZ_SEED is given); a
# failure is shrunk and written to reports/fuzz/ as a scenario file.
FUZZ_MINUTES ?= 5
FUZZ_SEED ?= $(shell date +%s)
fuzz: venv
	$(BIN)/sandbox up
	SANDBOX_FUZZ_MINUTES=$(FUZZ_MINUTES) SANDBOX_PROPERTY_SEED=$(FUZZ_SEED) \
		$(BIN)/python -m pytest tests/e2e/test_property_sequences.py -s -p no:cacheprovider $(PYTEST_ARGS)

# Each deliberately broken job in every mode its scenario declares: prints what caught each, and fails unless each
# was caught by the failure it names (`python -m tests.broken_variants --every-scenario` sweeps whole suites instead).
broken-variants: venv
	$(BIN)/sandbox up
	$(BIN)/python -m tests.broken_variants

# The linters the CI-file tests run (actionlint, gitlab-ci-local), once per machine.
ci-linters: venv
	$(BIN)/python -m tests.ci_linters

# The documentation site: the reference pages read off the code again, then built into reports/site with every
# internal link and anchor checked (`tests/unit/test_docs.py` checks both in `make test`).
docs: venv
	$(BIN)/python -m tests.reference_docs
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir reports/site

bench: venv
	$(BIN)/sandbox up
	$(BIN)/python -m cdc_sandbox.bench

clean: venv
	$(BIN)/sandbox reset --yes
	rm -rf $(VENV) reports
