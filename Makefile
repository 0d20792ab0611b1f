# Two entry points a newcomer needs: `make demo` and `make test`.
# Both create .venv and install the project into it when needed.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
# setuptools warns on every editable install that a folder named like the package could shadow it:
# true of any project laid out as this one is, and nothing a newcomer can act on, so it is not shown
PIP    := PYTHONWARNINGS="ignore:Editable installation" $(PY) -m pip

.PHONY: demo test test-fast test-multihost test-etcd lint docs bench clean

LINTED := landlord lookup tests benchmarks examples

# the runtime alone (Pyro5, serpent, msgpack): all `make demo` needs
$(VENV)/.runtime: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e .
	touch $@

# and the test toolchain, with the extras the tests exercise: what `make test` needs
$(VENV)/.installed: $(VENV)/.runtime
	$(PIP) install --quiet -e '.[test,etcd,metrics,docs]'
	touch $@

demo: $(VENV)/.runtime
	$(PY) examples/quoter/demo.py

# the whole suite, after lint and types: a lint or type error fails `make test` too
test: lint
	$(PY) -m pytest -q --durations=20

test-fast: lint
	$(PY) -m pytest -q -m "not slow"

# ruff on everything, mypy --strict on landlord/ and lookup/, and the layer
# contracts (import-linter); settings and contracts in pyproject.toml
lint: $(VENV)/.installed
	$(PY) -m ruff check $(LINTED)
	$(PY) -m mypy
	$(VENV)/bin/lint-imports --no-cache

# hosts as network namespaces (needs root and iproute2); `make test` runs these too
test-multihost: $(VENV)/.installed
	LANDLORD_REQUIRE_MULTIHOST=1 $(PY) -m pytest -q tests/multihost

# a real three-member etcd on loopback (needs the etcd binary: apt-get install etcd-server)
test-etcd: $(VENV)/.installed
	LANDLORD_REQUIRE_ETCD=1 $(PY) -m pytest -q tests/landlord/test_election.py tests/landlord/test_testing_etcd.py \
	    tests/landlord/test_etcdstore.py tests/landlord/test_replicated.py tests/lookup/test_lookup_replicated.py \
	    tests/faults/test_replicated_failover.py tests/faults/test_lock_replicated.py tests/examples/test_example_replicated.py

# the API reference (docs/reference, Sphinx autodoc) into build/docs, a warning failing it;
# make test builds it too (tests/test_docs.py), so that it cannot rot
docs: $(VENV)/.installed
	$(PY) -m sphinx -E -n -W --keep-going -q -b html docs/reference build/docs
	@echo "the API reference: build/docs/index.html"

bench: $(VENV)/.installed
	$(PIP) install --quiet -e '.[test,etcd,metrics,docs,bench]'
	-VENV=$(VENV) bash benchmarks/setup_etcd.sh
	-VENV=$(VENV) bash benchmarks/setup_locks.sh
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis .mypy_cache .ruff_cache
