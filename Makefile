# cvxrank: two commands do all the set-up on a fresh machine.
#   make verify  -> create .venv if needed, install cvxrank with its extras, run `cvxrank verify`
#                   (its figures go to results/verify-figures/, git-ignored)
#   make figures -> regenerate figures/ (tracked): one small figure per method family, the
#                   CSVs behind them and their index README.md (`cvxrank figures --all` for
#                   every pair)
#   make test    -> the same set-up, then the whole test suite (notebooks included)
#   make test-fast -> the suite without its slow tests (see the target)
#   make docs    -> the documentation site in docs/_build/html (API reference and gallery)
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install verify test test-fast lint docs figures clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e ".[notebooks,dev,dask,docs,benchopt]"
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

# Python's bytecode and the compiled kernels are built here, not by the first command a user
# runs: `compileall` writes the .pyc files (also where PYTHONDONTWRITEBYTECODE is set) and
# `cvxrank.compiled.precompile` compiles the numba kernels ahead of time into extension
# modules beside their sources (numba's cache where no C compiler is found).
install: $(STAMP)
	$(BIN)/python -m compileall -q cvxrank
	$(BIN)/python -m cvxrank.compiled.precompile

verify: install
	$(BIN)/cvxrank verify

# the whole suite in two processes (pytest-xdist; --dist loadgroup keeps a group's tests in
# one process: the one Sphinx build of tests/project/test_docs.py), each with its share of the
# cores' threads (tests/conftest.py): under 15 minutes on two cores; every test holds under
# that load (timing tests bound the solver's own clock or allow it)
test: install
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup tests

# the suite without the tests marked slow (real data, notebooks, verify and figures runs,
# reproductions, kernel compilations, the per-solver budgets, the seeds of a costly sweep beyond
# its sample), in two processes (pytest-xdist): under three minutes on two cores, for the
# edit-test loop; `make test` runs everything
test-fast: install
	$(BIN)/python -m pytest -q -m "not slow" -n 2 --dist loadgroup tests

lint: install
	$(BIN)/ruff check cvxrank tests benchmarks notebooks

# the documentation site (docs/conf.py): the pages of docs/, the API reference from the
# docstrings and the executed notebooks; every warning is an error. Open docs/_build/html/index.html
docs: install
	$(BIN)/sphinx-build -W --keep-going -q -b html docs docs/_build/html
	@echo "docs: open docs/_build/html/index.html"

LETOR3 ?= ../shared/data/letor3_ohsumed/QueryLevelNorm
MQ2008 ?= ../shared/data/letor4_mq2008

figures: install
	$(BIN)/cvxrank figures --out figures
	$(BIN)/cvxrank reproduce chapelle-fig3 --out figures/papers/chapelle-fig3
	$(BIN)/cvxrank reproduce agarwal-collins-fig1 --quick --data $(LETOR3) --out figures/papers/agarwal-collins-fig1
	$(BIN)/cvxrank reproduce conerank-table1 --quick --data $(MQ2008) --out figures/papers/conerank-table1

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info docs/_build docs/api docs/gallery
