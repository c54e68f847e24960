# streamjob: the two commands of the README, and a few more.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export STREAMJOB_HOME ?= $(CURDIR)/.streamjob

.PHONY: demo test test-slow test-all test-unit bench setup deps clean

## Quiet on purpose (issue 16): one line per step, pip's own output only on failure.
## streamjob and, editable beside it, its development tools (tools/: the benchmark, the
## local broker, the flights replay, the Nexmark generator), which streamjob does not ship.
$(STAMP): setup.cfg pyproject.toml tools/setup.cfg tools/pyproject.toml
	@echo "setting up $(VENV): installing streamjob and its packages (pip, a minute or two)"
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install -qq --disable-pip-version-check --upgrade pip
	@$(PY) -m pip install -qq --disable-pip-version-check -e '.[dev]' -e ./tools
	@$(PY) -m streamjob.spark  # Spark's classes archived once: every later start is faster
	@touch $(STAMP)

setup: $(STAMP)

## The main job: local broker, the NYC flights of 2013 into Kafka, flights.sql, results.
demo: $(STAMP)
	@$(PY) examples/flights/demo.py

## What the tests need from the machine (issue 29, docs/testing.md): ZooKeeper (the jar the
## integration fixture starts) and Chromium (the web console's browser tests), the Debian
## packages `zookeeper` and `chromium`. Silent and immediate when both are there; a missing
## one is installed with apt-get (as root, else through `sudo -n`); without apt-get, or when
## the install fails, one line says what to install and the tests that need it fail saying so.
ZOOKEEPER_JAR ?= /usr/share/java/zookeeper.jar
CHROMIUM_BIN ?= /usr/bin/chromium
deps:
	@missing=""; \
	test -e $(ZOOKEEPER_JAR) || missing="$$missing zookeeper"; \
	test -x $(CHROMIUM_BIN) || missing="$$missing chromium"; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if ! command -v apt-get >/dev/null 2>&1; then \
	  echo "deps: install the Debian packages$$missing (no apt-get here): the tests that need them will fail"; exit 0; \
	fi; \
	if [ "$$(id -u)" = 0 ]; then sudo=""; \
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; \
	else echo "deps: run as root (or with sudo): apt-get install$$missing"; exit 0; fi; \
	echo "deps: installing$$missing (apt-get)"; \
	{ $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $$missing >/dev/null; } \
	  || echo "deps: could not install$$missing with apt-get: the tests that need them will fail"

## pytest-xdist workers (2 = the cores of the project's hosts). Each integration worker
## has its own broker, ZooKeeper and Spark; modules go to workers whole (--dist loadfile),
## costliest first (tests/conftest.py), so a module's fixtures are built once.
WORKERS ?= 2
XDIST := -n $(WORKERS) --dist loadfile

## The tests, all but the `slow` ones: tests/unit (unit and component: no Spark), then
## tests/integration (component, spark and system), each in parallel with pytest-xdist.
## Each test carries its cost as a marker (unit, component, spark, system: setup.cfg);
## `-m spark` etc. select by cost.
test: $(STAMP) deps
	$(PY) -m pytest tests/unit -m "not slow" $(XDIST)
	$(PY) -m pytest tests/integration -m "not slow" $(XDIST)

## The slow ones: the chaos runs (SIGKILLs at random moments), ten jobs in one server,
## the grammar fuzz, the Spark standalone cluster, the benchmark harness, most Nexmark queries. CI runs `make test` and then these. Three workers on two cores:
## the longest modules (EXPECTED_S) start first; the 3-minute outage's worker mostly waits.
SLOW_WORKERS ?= 3
test-slow: $(STAMP) deps
	$(PY) -m pytest -m slow -n $(SLOW_WORKERS) --dist loadfile

test-all: test test-slow

test-unit: $(STAMP) deps
	$(PY) -m pytest tests/unit -m "not slow" $(XDIST)

## The benchmark (docs/performance.md; tools/streamjob_tools/bench): BENCH_ARGS=--quick for a run of about 3 minutes (184 s on 2026-11-27).
bench: $(STAMP)
	$(PY) -m streamjob_tools.bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .streamjob .pytest_cache *.egg-info tools/*.egg-info
