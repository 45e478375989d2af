# Two commands do everything on a fresh machine with Python 3.11+:
#   make demo   run squarepeg and runpod-deploy end to end on the embedded sandboxes
#   make test   install, then run every check (pytest, ruff, mypy, import-linter)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-deps
# `make demo` installs only what the demo runs: pegboard and its runtime dependencies, plus the
# extras named here (none: the RunPod part needs no SDK since the adapter speaks REST v2
# itself), never the dev tools (mypy, hypothesis, kubernetes-validate...).
DEMO_EXTRAS ?=
DEMO_STAMP := $(VENV)/.installed-demo

.PHONY: demo test check lint typecheck imports pytest install bench bench-fleet clean dev-check runpod-sdk2

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip setuptools wheel

$(STAMP): pyproject.toml setup.py | $(BIN)/python
	$(BIN)/python -m pip install -q '.[dev]'
	touch $(STAMP)

$(DEMO_STAMP): pyproject.toml setup.py Makefile | $(BIN)/python
	$(BIN)/python -m pip install -q '.$(if $(DEMO_EXTRAS),[$(DEMO_EXTRAS)])'
	touch $(DEMO_STAMP)

# A regular (non-editable) install, so tests and mypy see exactly what users get. build/ goes
# first: setuptools copies into it and never deletes, so a moved module would live on installed.
REINSTALL = rm -rf build && $(BIN)/python -m pip install -q --no-deps --no-build-isolation --force-reinstall .

install: $(STAMP)
	$(REINSTALL)

demo: $(DEMO_STAMP)
	$(REINSTALL)
	BIN=$(BIN) scripts/demo.sh

# The suite on PYTEST_WORKERS pytest-xdist workers: its tests often wait on subprocesses,
# sandboxes and sshd, so four workers on CI's two cores pay (three left the cores idle 17% of a
# run; a worker costs ~3 s of CPU to collect, tests/helpers/rewrite_cache.py: docs/testing.md,
# "pegboard's own suite"); PYTEST_WORKERS=0 runs it in this one process. A crashed worker ends
# the run as a failure instead of being replaced: xdist 3.8 under loadgroup hung for hours after
# a replacement.
PYTEST_WORKERS ?= 4

test: install
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --max-worker-restart=0
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy -p pegboard
	$(BIN)/lint-imports

check: test

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: install
	$(BIN)/mypy -p pegboard

imports: install
	$(BIN)/lint-imports

pytest: install
	$(BIN)/python -m pytest $(ARGS)

# The `runpod` SDK 2.x in a venv of its own (it cannot share .venv with the SDK 1.x our tests also
# drive): tests/integration/test_runpod_sdks_drive_the_sandbox.py runs it against the sandbox.
# CI builds it (.ci/run); locally that test skips until `make runpod-sdk2` has run once.
RUNPOD_SDK2_VENV ?= .venv-runpod-sdk2
RUNPOD_SDK2 ?= runpod==2.0.0rc2
$(RUNPOD_SDK2_VENV)/.installed:
	$(PYTHON) -m venv $(RUNPOD_SDK2_VENV)
	$(RUNPOD_SDK2_VENV)/bin/python -m pip install -q '$(RUNPOD_SDK2)'
	touch $@

runpod-sdk2: $(RUNPOD_SDK2_VENV)/.installed

# Benchmarks (not in the test gate); squarepeg 0.4.1 goes into its own .bench-venv on first use.
bench: install
	$(BIN)/python bench/run_all.py

# The fleet load benchmark (about an hour on 2 cores): docs/benchmarks.md, "A CI fleet".
bench-fleet: install
	mkdir -p artifacts && $(BIN)/python bench/sweep_load.py --json artifacts/bench-fleet.json --plot docs/sweep-load.png

clean:
	rm -rf build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache

# For developers working in the tree with an editable install (`pip install -e .`): no reinstall
# between edits; mypy reads src/ through a pegboard -> src symlink.
dev-check:
	$(BIN)/python -m pytest $(ARGS)
	$(BIN)/ruff check src tests bench
	mkdir -p .typecheck && ln -sfn ../src .typecheck/pegboard
	MYPYPATH=.typecheck $(BIN)/mypy -p pegboard
	$(BIN)/lint-imports
