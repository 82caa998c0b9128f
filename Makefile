# The two set-up commands: `make demo` and `make test`. Both are idempotent and
# fast when nothing changed: the virtualenv is rebuilt only when pyproject.toml
# changes, and the role image only when its sources change.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test check lint typecheck image host-deps bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Host tools the offline image build and the browser tests need (Debian packages).
host-deps:
	@bash deploy/host-deps.sh

image: $(STAMP) host-deps
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

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
