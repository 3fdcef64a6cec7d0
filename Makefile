# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
# Each creates .venv and installs what it needs on first use.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN = $(VENV)/bin
# Offline copies of the embedding model and tokenizer file, used when present
# (CI and the team's machines); elsewhere the normal downloads happen.
OFFLINE_ENV ?= ../shared/offline-env.sh
# (bash, so the script can find its own folder; skipped when already sourced, e.g. by CI)
WITH_ENV = if [ -z "$$OBLIVION_SHARED" ] && [ -f "$(OFFLINE_ENV)" ]; then . "$(OFFLINE_ENV)"; fi;

.PHONY: install demo test lint format bench clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[test]"
	touch $@

install: $(BIN)/.installed

demo: install
	$(WITH_ENV) $(BIN)/oblivion demo

test: install
	$(WITH_ENV) $(BIN)/python -m pytest -q -p no:cacheprovider

lint: install
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy oblivion_core oblivion_langchain oblivion_llamaindex

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: install
	$(WITH_ENV) $(BIN)/python bench/latency.py
	$(WITH_ENV) $(BIN)/python bench/locomo.py
	$(WITH_ENV) $(BIN)/python bench/updates.py
	$(WITH_ENV) $(BIN)/python bench/exact_archive.py
	$(WITH_ENV) $(BIN)/python bench/where.py
	$(WITH_ENV) $(BIN)/python bench/move.py
	$(WITH_ENV) $(BIN)/python bench/store_filter.py
	$(WITH_ENV) $(BIN)/python bench/backup.py
	$(WITH_ENV) $(BIN)/python bench/import_chroma.py

clean:
	rm -rf $(VENV) oblivion-demo .pytest_cache .mypy_cache .ruff_cache
