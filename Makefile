# gatebench — see README.md. Every target installs what it needs (scripts/setup.sh), idempotently.
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
SPEC ?= examples/auction/openapi.yaml
DEMO_FLAGS ?=

.PHONY: help demo test test-fast test-integration check format goldens bench lock setup setup-all clean bundle

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-18s %s\n", $$1, $$2}'

setup: ## the Python environment only (.venv)
	@scripts/setup.sh python

setup-all: ## everything the tests need: Debian packages, .venv, JVM gateways, Gatling, Node tools
	@scripts/setup.sh

demo: setup-all ## benchmark the auction example through 6 gateways + the baseline here (<= 10 min); DEMO_FLAGS=--quick for a smoke run
	@$(BIN)/gatebench validate $(SPEC)
	@AUCTION_TOKEN=$${AUCTION_TOKEN:-demo-token} $(BIN)/gatebench run $(SPEC) $(DEMO_FLAGS)
	@$(BIN)/gatebench report latest

test: setup-all ## install what the tests need, then run them all (unit, golden, integration, browser)
	@$(BIN)/pytest

test-fast: setup ## unit and golden tests only
	@$(BIN)/pytest -m "not integration"

test-integration: setup-all ## real gateways, emulators and the browser
	@$(BIN)/pytest -m integration

check: setup ## ruff format --check, ruff check, mypy on the core
	@$(BIN)/ruff format --check src tests benchmarks
	@$(BIN)/ruff check src tests benchmarks
	@$(BIN)/mypy

format: setup ## apply ruff's formatting and safe fixes
	@$(BIN)/ruff format src tests benchmarks
	@$(BIN)/ruff check --fix src tests benchmarks

goldens: setup ## rewrite tests/golden/ from the current renderers
	@$(BIN)/pytest tests/golden --update-goldens -q

bench: setup-all ## run the benchmarks and rewrite docs/benchmarks.md
	@$(PY) -m benchmarks

bundle: setup ## the Cloud Functions' source archives (build/functions/*.zip, see docs/cloud.md)
	@$(BIN)/gatebench cloud bundle --functions functions --out build/functions

lock: ## re-resolve requirements/dev.lock from pyproject.toml
	@scripts/lock.sh

clean: ## remove the environment, caches and results
	rm -rf $(VENV) .cache results .pytest_cache .mypy_cache .ruff_cache .hypothesis
