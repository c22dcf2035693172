# Tunelab: `make run` serves the dashboard, `make test` runs the tests. Each installs what it needs, at
# the exact versions (and hashes) of a lock file: requirements-run.lock (the dashboard and the CLI)
# for `run`, requirements.lock (that plus the test stack) for `test`; `make lock` refreshes both.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
PORT   ?= 8501
DB     ?= tunelab.duckdb
STAMP   = $(VENV)/.installed
RUN_STAMP = $(VENV)/.installed-run
LOCK    = requirements.lock
RUN_LOCK = requirements-run.lock
# uv resolves and installs from the lock; it is itself pinned so that two machines install alike.
UV_VERSION = 0.13.9
UV      = $(BIN)/uv
# The CPU build of torch 2.13.0 lies in a local wheel folder on the project's machines (PyPI's is a CUDA build).
WHEELS ?= /opt/wheels
FIND_LINKS = $(if $(wildcard $(WHEELS)),--find-links $(WHEELS))
# BLAS kernels `make test-blas` runs the numerical tests under ("unset": OpenBLAS picks one for the CPU).
BLAS_KERNELS ?= unset Haswell Zen SandyBridge SkylakeX Nehalem Prescott

.PHONY: install install-run lock reference run lint typecheck test test-fast test-blas fuzz bench system-test-deps clean \
  difftune-harness

$(UV):
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv==$(UV_VERSION)

# Bytecode: some machines set PYTHONDONTWRITEBYTECODE, and then every process (each CLI call a test makes, each
# dashboard) would compile torch, pandas and streamlit from source again, 10-30 s apiece. The runtime install
# compiles everything it installs. The test install compiles only what the project imports, a quarter of the
# 18,000 files (tests/helpers/precompile.py, beside mypy: 90 s of CPU less in a fresh clone), and the tests run
# with bytecode writing on, so whatever else they load is compiled once.
SYNC = $(UV) pip sync --quiet --python $(BIN)/python --require-hashes $(FIND_LINKS)
PRECOMPILED = $(VENV)/.precompiled
PRECOMPILE = env -u PYTHONDONTWRITEBYTECODE $(BIN)/python tests/helpers/precompile.py && touch $(PRECOMPILED)
$(STAMP): $(LOCK) pyproject.toml Makefile | $(UV)
	$(SYNC) $(LOCK)
	$(UV) pip install --quiet --python $(BIN)/python --no-deps -e .
	@rm -f $(PRECOMPILED)
	@touch $(STAMP)

$(PRECOMPILED): $(STAMP)
	$(PRECOMPILE)

install: $(STAMP)

# The runtime alone (no torch, playwright, pytest). A venv the test stack is synced into already holds
# it (same versions); otherwise sync the runtime lock (`pip sync`: no resolution, a second from uv's
# cache) and drop the test stamp, so the next `make test` puts its stack back.
install-run: | $(UV)
	@if [ -f $(STAMP) ] && [ $(STAMP) -nt $(LOCK) ] && [ $(STAMP) -nt pyproject.toml ]; then \
	  echo "runtime installed (with the test stack)"; [ -f $(PRECOMPILED) ] || { $(PRECOMPILE); }; \
	elif [ ! -f $(RUN_STAMP) ] || [ $(RUN_LOCK) -nt $(RUN_STAMP) ] || [ pyproject.toml -nt $(RUN_STAMP) ]; then \
	  $(SYNC) --compile-bytecode $(RUN_LOCK) && \
	  $(UV) pip install --quiet --python $(BIN)/python --no-deps -e . && rm -f $(STAMP) && touch $(RUN_STAMP); \
	fi

# Every dependency (runtime and test extras) resolved for CPython 3.11 on x86-64 Linux, with hashes;
# then the runtime alone, held to the same versions.
LOCK_FLAGS = --generate-hashes --python-version 3.11 --python-platform x86_64-manylinux_2_28 $(FIND_LINKS) \
  --no-emit-find-links --quiet
lock: | $(UV)
	$(UV) pip compile pyproject.toml --extra test $(LOCK_FLAGS) -o $(LOCK)
	$(UV) pip compile pyproject.toml --constraint $(LOCK) $(LOCK_FLAGS) -o $(RUN_LOCK)

# The R reference values of tests/reference (Debian r-base-core and r-cran-car); make test only reads them.
reference:
	Rscript tests/reference/make_reference.R

run: install-run difftune-harness
	$(BIN)/tunelab --db $(DB) serve --port $(PORT)

# DiffTune's basic-block measurement harness (C, the system cc); measure.py compiles it on demand too.
difftune-harness: build/difftune-harness
build/difftune-harness: engine/surrogates/difftune/harness/harness.c
	@mkdir -p build
	cc -O2 -std=gnu11 -fPIE -pie -o $@ $<

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

# ruff (style, imports, bug patterns), as configured in pyproject.toml; make test runs it first.
lint: install
	$(BIN)/ruff check .

# mypy over engine/, storage/, workflows/ and app/, strict on engine/ (pyproject.toml); make test runs it.
typecheck: install
	$(BIN)/mypy

# Two phases: the tests on $(PYTEST_WORKERS) workers, a file's tests on one (module fixtures are built once);
# then, alone, the browser tests (each file serves a dashboard to its own tab of the worker's chromium) and those
# starting Dask clusters (two at once compete for the cores; a cluster's spawned workers hung inside a test worker).
# The second phase runs even when the first fails, so one run reports every failure.
PYTEST_WORKERS ?= 2
# One compute thread per worker (torch, BLAS): two workers each spinning two threads on 2 cores thrash.
PARALLEL_TESTS = OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile
# Each phase lists its slowest tests: make test has a 10-minute goal on 2 cores (a fresh clone took 15 min, 897 s, at
# the last count).
DURATIONS = --durations=12 --durations-min=5
# The second phase collects only the files holding such marks: importing the other test modules again cost each
# worker 6 s of CPU.
SECOND_PHASE = $(shell grep -l -E 'pytest\.mark\.(browser|serial)' tests/*.py tests/*/*.py)
# mypy (one core) and the bytecode of the test install (the other) side by side; then the tests, writing bytecode.
test: install system-test-deps lint difftune-harness
	@$(MAKE) --no-print-directory -j2 typecheck $(PRECOMPILED)
	@status=0; unset PYTHONDONTWRITEBYTECODE; \
	$(PARALLEL_TESTS) $(DURATIONS) -m "not browser and not serial" || status=$$?; \
	$(BIN)/python -m pytest -q $(DURATIONS) -m "browser or serial" -n 2 --dist loadfile $(SECOND_PHASE) || status=$$?; \
	exit $$status

test-fast: $(PRECOMPILED)
	$(PARALLEL_TESTS) -m "not browser and not serial"

# A developer target: the numerical tests once per OpenBLAS kernel. `make test` and CI never touch
# OPENBLAS_CORETYPE; here each run sets it (or unsets it, with OPENBLAS_L2_SIZE) and prints the kernel used.
test-blas: $(PRECOMPILED) system-test-deps
	@failed=""; for kernel in $(BLAS_KERNELS); do \
	  if [ "$$kernel" = unset ]; then run="env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE"; \
	  else run="env OPENBLAS_CORETYPE=$$kernel"; fi; \
	  if ! used=$$($$run $(BIN)/python tests/helpers/blas_kernel.py 2>/dev/null); then \
	    echo "== OPENBLAS_CORETYPE=$$kernel: this CPU cannot run it (e.g. AVX-512 on a CPU without it), skipped"; \
	    skipped="$$skipped $$kernel"; continue; fi; \
	  echo "== OPENBLAS_CORETYPE=$$kernel: $$used"; \
	  $$run $(BIN)/python -m pytest -q -p no:cacheprovider -m "not browser" || failed="$$failed $$kernel"; \
	  ran="$$ran $$kernel"; \
	done; \
	if [ -n "$$failed" ]; then echo "test-blas failed under:$$failed"; exit 1; fi; \
	if [ -z "$$ran" ]; then echo "test-blas: no kernel of '$(BLAS_KERNELS)' runs on this CPU"; exit 1; fi; \
	echo "test-blas passed under:$$ran$${skipped:+ (skipped, not executable here:$$skipped)}"

# The parser fuzz suite, long: FUZZ_EXAMPLES examples per target (make test runs a few hundred each), with no
# per-test time limit (a target takes minutes), each target's example count printed.
FUZZ_EXAMPLES ?= 100000
fuzz: install
	HYPOTHESIS_PROFILE=fuzz FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/python -m pytest -q -p no:cacheprovider --timeout=0 \
	  --hypothesis-show-statistics tests/fuzz

bench: install
	@for script in bench/*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache *.egg-info
