# Every target creates .venv as needed, so `make demo` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup docs check-spec check-spec-large test test-long test-fast fuzz demo bench lint clean services-up \
        services-down record-langgraph findings no-false-alarm

setup: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev,runtimes]'
	@# TLC's trace data override, compiled with the JDK's javac (without one: a note, no error)
	$(BIN)/python -m resumecheck.tlc.override
	@touch $(STAMP)

## Model-check every MC configuration and show that every mutant is rejected for its property.
## (`make test` runs a slice: tests/test_spec.py, SLICE_SKIP.)
check-spec: setup
	$(BIN)/resume-check spec

## The larger configurations, too slow for CI.
check-spec-large: setup
	$(BIN)/resume-check spec --large

## docs/findings.md: each known LangGraph bug's cell, recorded at the releases it lived in and
## those that fixed it (an environment per release, built once from the package registry).
findings: setup
	$(BIN)/python -m rctools.langgraph.known_bugs tests/fixtures/known_bugs docs/findings.md

## docs/architecture.md's table of suites, from the registry (resumecheck/suites.py).
docs: setup
	$(BIN)/python -c 'from pathlib import Path; from resumecheck.suites import write_table; write_table(Path("docs/architecture.md"))'

## The test suite, end to end with the real TLC (markers slow, services, corpus; not long).
test: setup
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -m "not long" -n 2 --dist loadfile --durations=25

## The checks that take minutes each: docs/pytest.md's worked example run verbatim, twice; the
## rest of what `make test` runs a slice of (every unseen app, every correct saver, the whole
## broken-saver zoo, the redis saver, each third-party saver's other API and the DynamoDB and
## Valkey savers' matrices, the routed workload's crashes, a matrix recorded twice for
## determinism). The contract's slice: make check-spec.
test-long: setup
	$(BIN)/python -m pytest -q -m long --durations=10

## The fast tier, under a minute: the CLI in-process on traces/revision, traces/sandbox and
## traces/recovery, reports against their schema, unit tests; no servers, no runtimes.
test-fast: setup
	$(BIN)/python -m pytest -q -m "not slow and not services and not corpus"

## Fuzzing: many batches of mutated traces through the real CLI and TLC (`make test` runs 3),
## and many mutants of recorded traces judged by the checker and the history oracle
## (`make test` draws 1,000), on a seed of the day unless AGREE_SEED is given.
FUZZ_EXAMPLES ?= 300
AGREE_MUTANTS ?= 20000
AGREE_SEED ?= $(shell date +%Y%m%d)
fuzz: setup
	RESUME_CHECK_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/python -m pytest -q tests/test_fuzz.py \
	  --hypothesis-show-statistics
	RESUME_CHECK_AGREE_MUTANTS=$(AGREE_MUTANTS) RESUME_CHECK_AGREE_SEED=$(AGREE_SEED) \
	  $(BIN)/python -m pytest -q tests/test_agreement.py -k oracle_agree

## The main job on built-in examples: judge every recorded trace against the contract, then
## record and judge the LangGraph conformance matrix on SQLite (real runs, real SIGKILLs).
demo: setup
	@mkdir -p out
	$(BIN)/resume-check traces/ > out/demo-traces.txt ; test $$? -le 1
	@tail -n 1 out/demo-traces.txt
	@echo "(traces/ holds violating examples on purpose: the full report is in out/demo-traces.txt)"
	$(BIN)/resume-check run langgraph --backend sqlite --out out/demo-langgraph

## Re-record corpora/langgraph/: per backend the whole matrix into out/record/<backend> and a
## curated corpus with the checker's verdicts into corpora/langgraph/<backend>/; the shapes.
## The third-party savers (docs/backends.md) run on the project's own servers, started first;
## their shapes run too (out/record/<backend>-shapes, not kept). sqlite, the reference, is
## published first: every other backend keeps only the cells whose verdict differs from its
## (and a fault-free cell per scenario; docs/langgraph.md, "Matrix per backend").
LANGGRAPH_MATRIX := chain,node-error,fanout,two-interrupts,retry,fork,pinned-twice,concurrent-2,concurrent-3,update-older
LANGGRAPH_SHAPES := loop,approval-loop,router,send,react,subgraph,subgraph-interrupt,update-state,exit
THIRD_PARTY_BACKENDS := mysql mysql-async valkey valkey-async dynamodb dynamodb-checkpoint
record-langgraph: setup
	@for b in sqlite memory postgres redis lmdb objectstorage; do \
	  $(BIN)/resume-check run langgraph --backend $$b --scenarios $(LANGGRAPH_MATRIX) \
	    --no-reference --no-progress --out out/record/$$b > /dev/null ; \
	  $(BIN)/python -m rctools.langgraph.publish out/record/$$b/summary.json corpora/langgraph/$$b ; \
	done
	@urls=$$($(BIN)/python -m rctools.services up --install) && export $$urls && \
	for b in $(THIRD_PARTY_BACKENDS); do \
	  $(BIN)/resume-check run langgraph --backend $$b --scenarios $(LANGGRAPH_MATRIX) \
	    --no-reference --no-progress --out out/record/$$b > /dev/null ; \
	  $(BIN)/python -m rctools.langgraph.publish out/record/$$b/summary.json corpora/langgraph/$$b ; \
	  $(BIN)/resume-check run langgraph --backend $$b --scenarios $(LANGGRAPH_SHAPES) \
	    --no-reference --no-progress --out out/record/$$b-shapes > /dev/null ; \
	done
	$(BIN)/python -m rctools.langgraph.tables --write docs/langgraph.md corpora/langgraph/*/summary.json
	$(BIN)/python -m rctools.langgraph.shapes corpora/langgraph/shapes

## No false alarm: the full matrix at stride 1 (every kill point) on every bundled correct saver
## (LangGraph's own and the project's correct wrappers), zero saver findings required; the
## figures go into docs/langgraph.md. Then every recorded trace again as a slower store would
## have given it (resume-check slower: no variant may be flagged where its trace conforms).
## Hours on two cores: not in CI (SAVERS=a,b for fewer).
comma := ,
SAVERS ?= sqlite,sqlite-async,memory,postgres,redis,lmdb,correct_sqlite,table_saver,file_dict_saver,slow_ack_sqlite,log_dir_saver
no-false-alarm: setup
	$(BIN)/python -m rctools.langgraph.no_false_alarm --savers $(SAVERS) --out out/no-false-alarm \
	  --write docs/langgraph.md
	$(BIN)/resume-check slower --jobs 2 $(foreach s,$(subst $(comma), ,$(SAVERS)),out/no-false-alarm/$(s)/traces)

## What judging costs -- batches of 1, 100 and 1,000 traces, ONE 10,000-event trace against 100
## short ones, one process per trace, `resume-check spec`, the recorded ResumeCore traces of
## traces/ and corpora/ against the generated batch closest in events; wall, CPU-s of the process tree, peak
## RSS; every verdict checked -- then the recorder's overhead and --executor against a local
## run. Writes bench/results.md, bench/recorder-results.md, bench/executor-results.md. The
## batch of 10,000 runs in the first round only. The batch of 1,000 is also judged by the last
## ResumeCore v2 checker (V2_CHECKER, a commit of this repository), side by side.
V2_CHECKER ?= 1d0acb4
bench: setup
	$(BIN)/python bench/batch_bench.py --sizes 1,100,1000,10000 --baseline $(V2_CHECKER) \
	  --out bench/results.md
	$(BIN)/python bench/recorder_bench.py --out bench/recorder-results.md
	$(BIN)/python bench/final_read_bench.py --out bench/final-read-results.md
	$(BIN)/python bench/executor_bench.py --out bench/executor-results.md

## Private PostgreSQL 15, redis-server, MariaDB and moto (DynamoDB) on 127.0.0.1 for the
## checkpointer backends (data in .services/; installs the Debian packages if missing). Prints
## RESUME_CHECK_{PG,REDIS,MYSQL,DYNAMODB}_URL=...; reuses servers that are already up. Tests
## start them on their own. docs/backends.md lists the backends.
services-up: setup
	$(BIN)/python -m rctools.services up --install

services-down: setup
	$(BIN)/python -m rctools.services down

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) states *.egg-info
