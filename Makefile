# The whole set-up is two commands (see README.md):
#   make demo   – create .venv, install qoe (with plots), score the bundled samples in data/, draw a heatmap
#   make test   – create .venv, install qoe with its test extras (and tshark when possible), run pytest
#   make check  – the quick tier: the same without the tests marked slow (under a minute on 2 cores)
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# pytest-xdist: the suite on every core (CI has 2), at most 4 workers; --dist loadscope keeps a
# module's tests, and its expensive fixtures (live captures, decoded clips), on one worker.
# `make test PYTEST_ARGS=` runs it in one process.
PYTEST_ARGS ?= -n auto --maxprocesses=4 --dist loadscope

.PHONY: demo test check docs bench bench-short system-deps bytecode clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip setuptools wheel

# Stamps record which install is in place; they are remade when pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[plot]'
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test,dask,plot,docs,data]'
	touch $@ $(VENV)/.installed

# qoe's modules byte-compiled, as an install from a wheel leaves them: an editable install does
# not, and where PYTHONDONTWRITEBYTECODE is set (as on some CI runners) Python would otherwise
# compile every module it imports again in every run, 50 to 80 ms per `qoe` command (issue 25).
# Only what changed since the last run is compiled again.
bytecode: | $(BIN)/python
	$(BIN)/python -m compileall -q src cli > /dev/null

# Debian tools the tests use as independent cross-checks (tshark), and those data/*/make_samples.sh
# need (tcpdump, iperf3, curl, wget, openssl, sipp). Installed when we can
# (root with apt-get); the tests that need them skip, saying so, when they are absent.
system-deps:
	@bash tools/install-system-deps.sh

demo: $(VENV)/.installed bytecode
	$(BIN)/qoe demo data

test: $(VENV)/.installed-test system-deps bytecode
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The quick tier: the suite less the tests marked slow (live tool runs over every capture, the
# multi-gigabyte memory runs, the Sphinx build, the notebook, the demo; tests/conftest.py lists them).
check: $(VENV)/.installed-test system-deps bytecode
	$(BIN)/python -m pytest -m "not slow" $(PYTEST_ARGS)

# Speed and accuracy against the reference tools; each script prints its own table.
bench: $(VENV)/.installed-test system-deps bytecode
	$(BIN)/python benchmarks/run_all.py

bench-short: $(VENV)/.installed-test system-deps bytecode
	$(BIN)/python benchmarks/run_all.py --short

# The user guide, the API reference from the docstrings, and the examples; warnings are errors.
docs: $(VENV)/.installed-test
	$(BIN)/python -m sphinx -W --keep-going -b html docs docs/_build/html

clean:
	rm -rf $(VENV) build src/*.egg-info cli/*.egg-info .pytest_cache docs/_build
