# graphmem: two commands. `make demo` sets up and runs the quickstart; `make test` sets up and runs the tests.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup demo test check bench-learnings clean

# --no-compile: Python compiles only the modules a program imports, on first import, instead of
# pip compiling every installed file (measured here: 144 s -> 14 s for the dependencies, 43 -> 21 s for torch).
# torch first, CPU-only: the default CUDA wheels are gigabytes. TORCH / TORCH_INDEX choose it, e.g.
# make demo TORCH=torch TORCH_INDEX=https://download.pytorch.org/whl/cpu   (any Linux machine)
TORCH ?= torch==2.13.0
TORCH_INDEX ?=
$(BIN)/graphmem: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --no-compile $(TORCH) $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(BIN)/pip install --quiet --no-compile -e ".[dev]"
	@touch $(BIN)/graphmem

setup: $(BIN)/graphmem

demo: setup
	HF_HUB_OFFLINE=1 $(BIN)/python examples/quickstart.py
	@echo "The graphmem command is in $(BIN): run '. $(BIN)/activate' first, or call $(BIN)/graphmem directly."

# The tests start many Python processes (the CLI, servers, model loads, crash tests). Set-up
# installs without compiling (--no-compile above), so the first process to import a module writes
# its .pyc and the others read it, even where the environment sets PYTHONDONTWRITEBYTECODE (an
# empty value turns it off): otherwise every process compiles torch's and transformers' imports
# again (measured: importing sentence-transformers 26-34 s without .pyc files, 12-15 s with).
test: setup
	PYTHONDONTWRITEBYTECODE= HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -n 2

check: setup
	$(BIN)/mypy graphmem
	$(BIN)/ruff check graphmem

bench-learnings: setup
	mkdir -p benchmarks/results/local && cp benchmarks/results/history.jsonl benchmarks/results/local/history.jsonl
	HF_HUB_OFFLINE=1 $(BIN)/graphmem bench learnings --check --variants hybrid --history benchmarks/results/local/history.jsonl \
		--json-out benchmarks/results/local/learnings.json --png-out benchmarks/results/local/learnings.png

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache
