# streamjob: the two commands of the README, and a few more.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export STREAMJOB_HOME ?= $(CURDIR)/.streamjob

.PHONY: demo test test-unit setup clean

$(STAMP): setup.cfg pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

## The main job: local broker, the NYC flights of 2013 into Kafka, flights.sql, results.
demo: $(STAMP)
	$(PY) examples/flights/demo.py

## Every test: unit (no Spark) and integration (Spark, the broker, PostgreSQL).
test: $(STAMP)
	$(PY) -m pytest

test-unit: $(STAMP)
	$(PY) -m pytest tests/unit -m "not slow"

clean:
	rm -rf $(VENV) .streamjob .pytest_cache *.egg-info
