# Tunelab: `make run` serves the dashboard, `make test` runs the tests. Both install what they need.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
PORT   ?= 8501
DB     ?= tunelab.duckdb
STAMP   = $(VENV)/.installed

.PHONY: install run test test-fast bench system-test-deps clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

install: $(STAMP)

run: install
	$(BIN)/tunelab --db $(DB) serve --port $(PORT)

# Debian packages the tests drive for real: chromium (browser tests), gcc (C kernel runner),
# llvm-19's llvm-mc-19/llvm-mca-19 (McaRunner).
system-test-deps:
	@missing=""; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	command -v gcc >/dev/null 2>&1 || missing="$$missing gcc"; \
	command -v llvm-mca-19 >/dev/null 2>&1 && command -v llvm-mc-19 >/dev/null 2>&1 || missing="$$missing llvm-19"; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages for the tests:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

test: install system-test-deps
	$(BIN)/python -m pytest -q

test-fast: install
	$(BIN)/python -m pytest -q -m "not browser"

bench: install
	@for script in bench/*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache *.egg-info
