# graphmem: two commands. `make demo` sets up and runs the quickstart; `make test` sets up and runs the tests.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup demo test check bench-learnings clean

# torch==2.13.0 first: it is the local CPU build; any other version pulls gigabytes of CUDA.
$(BIN)/graphmem: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e ".[dev]"
	@touch $(BIN)/graphmem

setup: $(BIN)/graphmem

demo: setup
	HF_HUB_OFFLINE=1 $(BIN)/python examples/quickstart.py

test: setup
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest

check: setup
	$(BIN)/mypy graphmem
	$(BIN)/ruff check graphmem

bench-learnings: setup
	HF_HUB_OFFLINE=1 $(BIN)/graphmem bench learnings --check

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache
