# streamjob: the two commands of the README, and a few more.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export STREAMJOB_HOME ?= $(CURDIR)/.streamjob

.PHONY: demo test test-slow test-all test-unit bench setup clean

$(STAMP): setup.cfg pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

## The main job: local broker, the NYC flights of 2013 into Kafka, flights.sql, results.
demo: $(STAMP)
	$(PY) examples/flights/demo.py

## The tests, all but the `slow` ones: tests/unit (unit and component: no Spark) in
## parallel with pytest-xdist, then tests/integration (component, spark and system) in one
## process that shares one broker and one Spark. Each test carries its cost as a marker
## (unit, component, spark, system: setup.cfg); `-m spark` etc. select by cost.
test: $(STAMP)
	$(PY) -m pytest tests/unit -m "not slow" -n 2
	$(PY) -m pytest tests/integration -m "not slow"

## The slow ones: the chaos runs (SIGKILLs at random moments), ten jobs in one server,
## the grammar fuzz. CI runs `make test` and then these.
test-slow: $(STAMP)
	$(PY) -m pytest -m slow

test-all: test test-slow

test-unit: $(STAMP)
	$(PY) -m pytest tests/unit -m "not slow" -n 2

## The benchmark (docs/performance.md): BENCH_ARGS=--quick for a 3-minute run.
bench: $(STAMP)
	$(PY) -m streamjob.bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .streamjob .pytest_cache *.egg-info
