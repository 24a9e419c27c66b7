# Every target creates .venv as needed, so `make demo` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup check-spec check-spec-large test demo bench lint clean services-up services-down

setup: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev,runtimes]'
	@touch $(STAMP)

## Model-check every MC configuration and show that every mutant is rejected for its property.
check-spec: setup
	$(BIN)/resume-check spec

## The larger configurations, too slow for CI.
check-spec-large: setup
	$(BIN)/resume-check spec --large

## The test suite, end to end with the real TLC.
test: setup
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

## The main job on built-in examples: judge every recorded trace against the contract.
demo: setup
	$(BIN)/resume-check traces/ ; test $$? -le 1
	@echo "(exit code 1 above is expected: traces/ holds violating examples on purpose)"

## Batched versus per-trace TLC runs; writes bench/results.md.
bench: setup
	$(BIN)/python bench/batch_bench.py --out bench/results.md

## Private PostgreSQL 15 and redis-server on 127.0.0.1 for the checkpointer backends (data in
## .services/; installs the Debian packages if missing). Prints RESUME_CHECK_PG_URL=... and
## RESUME_CHECK_REDIS_URL=...; reuses servers that are already up. Tests start them on their own.
services-up: setup
	$(BIN)/python -m rctools.services up

services-down: setup
	$(BIN)/python -m rctools.services down

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) states *.egg-info
