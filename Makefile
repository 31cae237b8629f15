# dpviz — developer entry points.  `make run` and `make test` are all a newcomer needs.
VENV    ?= .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
DEPS    := $(wildcard requirements*.txt) pyproject.toml
PYTEST_ARGS ?=
PYTEST_WORKERS ?= 2
SHOTS_ARGS  ?=

.PHONY: venv install run test shots bench

venv install: $(STAMP)

$(PY):
	python3 -m venv $(VENV)

# Re-install only when a requirements file or pyproject.toml is newer than the stamp.  The pinned packages are
# installed by uv (from PyPI into this venv: ~10 s where pip takes 80-120 s on this 2-core box, most of it
# compiling every module of every package to bytecode; here each module is compiled on its first import);
# where uv cannot be had, pip does the same install.
UV_VERSION := 0.13.9
UV_INSTALL := $(VENV)/bin/uv pip install -q --system-certs --python $(PY)
$(STAMP): $(DEPS) | $(PY)
	@if $(PY) -m pip install -q --disable-pip-version-check uv==$(UV_VERSION) 2>/dev/null \
	    && $(UV_INSTALL) -r requirements-dev.txt && $(UV_INSTALL) -e . --no-deps; then :; else \
	  echo "make: no install with uv, installing with pip" >&2; \
	  $(PY) -m pip install -q --disable-pip-version-check -r requirements-dev.txt && \
	  $(PY) -m pip install -q --disable-pip-version-check -e . --no-deps; \
	fi
	touch $@

# `make run LEDGER=PATH`: page draws are charged to that ledger (streamlit run app.py -- --ledger PATH; created
# on the first draw). Without it: $DPVIZ_LEDGER, else the default ledger if it exists, else a ledger per session.
LEDGER ?=
run: $(STAMP)
	PYTHONDONTWRITEBYTECODE= $(VENV)/bin/streamlit run app.py --server.address 127.0.0.1 --server.headless true --browser.gatherUsageStats false \
	  $(if $(LEDGER),-- --ledger '$(LEDGER)')

# All tests, including the browser (e2e) layer, on PYTEST_WORKERS processes (pytest-xdist; 2 = this box's cores;
# worksteal: an idle worker takes queued tests from the other, so the long browser tests do not end on one).  pytest exit code 5 = "no tests collected":
# it is a failure here, never success.
# PYTHONDONTWRITEBYTECODE is cleared: the first import of a module writes its bytecode for every later process
# (the suite starts many: CLI runs, the server, xdist workers).
test: $(STAMP)
	@OPENBLAS_NUM_THREADS=1 PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist worksteal $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected NO tests (exit 5) -> failing" >&2; fi; \
	exit $$rc

# Screenshots for a human: home + every page -> shots/.  README image:
#   .venv/bin/python tools/shoot.py --out docs Tree
shots: $(STAMP)
	$(PY) tools/shoot.py $(SHOTS_ARGS)

# Every bench/*.py but the shared helpers and the README table writer (run it after: python bench/readme_table.py).
bench: $(STAMP)
	@set -e; found=0; for f in bench/*.py; do \
	  [ -e "$$f" ] || continue; \
	  case "$$f" in bench/common.py|bench/readme_table.py|bench/ab_release.py) continue;; esac; \
	  found=1; echo "== $$f"; $(PY) "$$f"; \
	done; [ $$found -eq 1 ] || echo "no bench/*.py yet"
