# gatebench — see README.md. Every target installs what it needs (scripts/setup.sh), idempotently.
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
SPEC ?= examples/auction/openapi.yaml
DEMO_FLAGS ?=

.PHONY: help demo test test-fast test-integration check format goldens bench schema lock setup setup-demo setup-all measure-setup clean bundle

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-18s %s\n", $$1, $$2}'

setup: ## the Python environment only (.venv)
	@scripts/setup.sh python

setup-demo: ## only what the demo needs: 5 Debian gateways, JDK + Maven, .venv (runtime), Go backend, Gatling
	@scripts/setup.sh --demo

setup-all: ## everything the tests need: Debian packages, .venv, JVM gateways, Gatling, Node tools, corpus
	@scripts/setup.sh

demo: setup-demo ## benchmark the auction example through 6 gateways + the baseline here (<= 10 min); DEMO_FLAGS=--quick for a smoke run
	@AUCTION_TOKEN=$${AUCTION_TOKEN:-demo-token} $(BIN)/gatebench validate $(SPEC)
	@AUCTION_TOKEN=$${AUCTION_TOKEN:-demo-token} $(BIN)/gatebench run $(SPEC) $(DEMO_FLAGS)
	@$(BIN)/gatebench report latest

test: setup-all ## install what the tests need, then run them all (unit, golden, integration, browser)
	@scripts/test.sh

test-fast: setup ## unit and golden tests only
	@$(BIN)/pytest -m "not integration"

test-integration: setup-all ## real gateways, emulators and the browser
	@$(BIN)/pytest -m integration

check: setup ## ruff format --check, ruff check, mypy on the core, the import contracts (.importlinter)
	@$(BIN)/ruff format --check src tests benchmarks
	@$(BIN)/ruff check src tests benchmarks
	@$(BIN)/mypy
	@$(BIN)/lint-imports --no-cache

format: setup ## apply ruff's formatting and safe fixes
	@$(BIN)/ruff format src tests benchmarks
	@$(BIN)/ruff check --fix src tests benchmarks

goldens: setup ## rewrite tests/golden/ from the current renderers
	@$(BIN)/pytest tests/golden --update-goldens -q

bench: setup-all ## run the benchmarks and rewrite docs/benchmarks.md
	@$(PY) -m benchmarks

bundle: setup ## the Cloud Functions' source archives (build/functions/*.zip, see docs/cloud.md)
	@$(BIN)/gatebench cloud bundle --functions functions --out build/functions

measure-setup: ## time `make setup-demo` and `make setup-all` in a fresh clone with empty caches (README)
	@scripts/measure-setup.sh

schema: setup ## regenerate src/gatebench/core/schemas/x-gatebench.schema.json from the plan's models
	@$(BIN)/python -c "from gatebench.core.plan import SCHEMA_PATH, schema_text; SCHEMA_PATH.write_text(schema_text(), encoding='utf-8'); print(SCHEMA_PATH)"

lock: ## re-resolve requirements/dev.lock from pyproject.toml
	@scripts/lock.sh

clean: ## remove the environment, caches and results
	rm -rf $(VENV) .cache results .pytest_cache .mypy_cache .ruff_cache .hypothesis
