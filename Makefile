# pi-hermes-memory developer tasks. `make check` while working (lint + typecheck + unit tests),
# `make test` for everything. Both install first through `make dev` when anything changed.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
FUZZ_SECONDS ?= 60
DATA ?= ../shared/data/locomo-dev.json

.PHONY: hosts dev dev-postgres pg bench-postgres test check unit lint adr-index typecheck fuzz bench bench-sessions bench-retrieval bench-scanner bench-server bench-recall bench-false-recall bench-knowledge bench-keyword wheel-test clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip setuptools wheel

# `make dev` is a stamp (ADR 0055): the strict editable install links each file of the package
# into build/__editable__.*, so it is redone when pyproject.toml changes, when the venv is new,
# when a source file is added, removed or renamed (the file list below changes), or when the
# link tree is gone; editing an existing module needs no reinstall.
STAMP := $(VENV)/.installed
FILE_LIST := $(VENV)/.package-files

$(FILE_LIST): FORCE | $(BIN)/python
	@find domain application adapters -type f -not -path '*/__pycache__/*' -not -name '*.pyc' \
		| LC_ALL=C sort > $@.new
	@if cmp -s $@.new $@; then rm -f $@.new; else mv $@.new $@; fi

$(STAMP): pyproject.toml $(FILE_LIST) $(BIN)/python $(if $(wildcard build/__editable__.*),,FORCE)
	$(BIN)/pip install -q -e '.[dev,local,server,postgres,lancedb,langgraph,openai-agents,anthropic]' --config-settings editable_mode=strict
	touch $@

dev: $(STAMP)

FORCE:

# the OS PostgreSQL server binaries (installed when missing, as root) for the PostgreSQL tests
dev-postgres: dev
	bash .ci/install-postgres

# a throwaway PostgreSQL cluster (Unix socket in a temp dir); prints the DSN line to export
pg: dev-postgres
	$(BIN)/python -m tests.support.postgres

# everything: unit, integration, e2e (about 40 minutes on a loaded shared 2-core machine)
# the real host programs the host tests run (issue 30): Pi and Claude Code, pinned, under build/
# (never global); with them found and the REQUIRE flags set, those tests cannot skip
HOSTS_ENV := PATH="$(CURDIR)/build/pi/node_modules/.bin:$$PATH" PI_HERMES_MEMORY_REQUIRE_PI=1 \
	PI_HERMES_MEMORY_REQUIRE_CLAUDE=1 \
	CLAUDE_CODE_BIN="$$(ls $(CURDIR)/build/hosts/claude-code/node_modules/@anthropic-ai/claude-code-*/claude 2>/dev/null | head -n 1)"
hosts:
	bash .ci/install-pi
	bash .ci/install-claude-code

test: dev hosts
	$(HOSTS_ENV) $(BIN)/python -m pytest -q

# the fast loop: lint, strict typecheck, then the unit and property tests (tests/unit)
check: lint typecheck unit

unit: dev
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/unit

# docs/adr/README.md from the records' headers (tests/unit/test_adr_index.py fails when stale)
adr-index: $(BIN)/python
	$(BIN)/python docs/adr/index.py

lint: dev
	$(BIN)/ruff check domain application adapters tests
	$(BIN)/ruff format --check domain application adapters tests

typecheck: dev
	$(BIN)/mypy -p pi_hermes_memory

fuzz: dev
	HYPOTHESIS_PROFILE=fuzz $(BIN)/python -m tests.fuzz.run --seconds $(FUZZ_SECONDS)

bench: dev
	$(BIN)/python -m tests.bench.run

bench-sessions: dev
	$(BIN)/python -m tests.bench.sessions $(SESSIONS_ARGS)

bench-retrieval: dev
	$(BIN)/python -m tests.bench.retrieval --data $(DATA)

bench-scanner: dev
	$(BIN)/python -m tests.bench.scanner $(SCANNER_ARGS)

bench-server: dev
	$(BIN)/python -m tests.bench.server $(SERVER_ARGS)

bench-recall: dev
	$(BIN)/python -m tests.bench.recall $(RECALL_ARGS)

bench-false-recall: dev
	$(BIN)/python -m tests.bench.false_recall --data $(DATA) $(FALSE_RECALL_ARGS)

bench-knowledge: dev
	$(BIN)/python -m tests.bench.knowledge $(KNOWLEDGE_ARGS)

# keyword search: p50 with common words at 1k/20k/100k rows, and the keyword floor's curve
bench-keyword: dev
	$(BIN)/python -m tests.bench.keyword --data $(DATA) $(KEYWORD_ARGS)

bench-postgres: dev-postgres
	$(BIN)/python -m tests.bench.postgres $(PG_BENCH_ARGS)

wheel-test: dev hosts
	rm -rf dist build/wheel-venv
	$(BIN)/python -m build --wheel --outdir dist . > /dev/null
	$(PYTHON) -m venv build/wheel-venv
	build/wheel-venv/bin/pip install -q "$$(ls dist/*.whl)[local,server,postgres,lancedb,langgraph,openai-agents,anthropic]" pytest hypothesis mypy openapi-spec-validator
	cd build && wheel-venv/bin/python -c "import pi_hermes_memory, sys; assert 'build/wheel-venv' in pi_hermes_memory.__file__, pi_hermes_memory.__file__"
	$(HOSTS_ENV) build/wheel-venv/bin/python -m pytest -q -p no:cacheprovider --import-mode=importlib -o pythonpath=. tests

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache .hypothesis

# the shipped contract suite of KIND (embedder, reranker, completer) against your adapter:
#   make contracts KIND=embedder ADAPTER=my_pkg.my_module:make_embedder [FAILING=...] [SLOW=... TIMEOUT=0.5]
.PHONY: contracts
contracts: dev
	@test -n "$(KIND)" -a -n "$(ADAPTER)" || { echo "usage: make contracts KIND=embedder|reranker|completer ADAPTER=pkg.module:factory [FAILING=pkg.module:factory] [SLOW=pkg.module:factory TIMEOUT=seconds]"; exit 2; }
	$(BIN)/python -m pi_hermes_memory.testing.run --kind '$(KIND)' --adapter '$(ADAPTER)' $(if $(FAILING),--failing '$(FAILING)') $(if $(SLOW),--slow '$(SLOW)') $(if $(TIMEOUT),--timeout '$(TIMEOUT)')
