# Context Service: `make run` serves the API with embedded PostgreSQL and NATS; `make test` runs
# the whole suite. Both create the virtual environment on first use.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

export CS_SANDBOX_IMAGE ?= busybox:1.36

.PHONY: run test lint typecheck check bench clean-data browser-deps

$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# local use without a gateway: the settings pages (/settings) let you type the subject
run: $(STAMP)
	CS_SETTINGS_DEV_SUBJECT=true $(BIN)/context-service serve

test: $(STAMP) browser-deps
	$(BIN)/pytest -W error -q --durations=20

# chromium, chromium-driver and axe-core for tests/browser (does nothing when present)
browser-deps:
	bash tests/browser/setup-deps.sh

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

check: lint typecheck test

bench: $(STAMP)
	$(BIN)/python -m bench.run_all

clean-data:
	rm -rf .context-service
