# The sandbox's entry points. Each target installs what it needs first (idempotently).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: up down status test bench clean venv

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -e .
	@touch $@

up: venv
	$(BIN)/sandbox up

down: venv
	$(BIN)/sandbox down

status: venv
	$(BIN)/sandbox status

test: venv
	$(BIN)/sandbox up
	@mkdir -p reports
	$(BIN)/python -m pytest --junitxml=reports/junit.xml $(PYTEST_ARGS)

bench: venv
	$(BIN)/sandbox up
	$(BIN)/python -m sandbox.bench

clean: venv
	$(BIN)/sandbox reset --yes
	rm -rf $(VENV) .tools reports
