# Two entry points a newcomer needs: `make demo` and `make test`.
# Both create .venv and install the project into it when needed.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python

.PHONY: demo test test-fast test-multihost bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

demo: $(VENV)/.installed
	$(PY) examples/quoter/demo.py

test: $(VENV)/.installed
	$(PY) -m pytest -q

test-fast: $(VENV)/.installed
	$(PY) -m pytest -q -m "not slow"

# hosts as network namespaces (needs root and iproute2); `make test` runs these too
test-multihost: $(VENV)/.installed
	LANDLORD_REQUIRE_MULTIHOST=1 $(PY) -m pytest -q tests/multihost

bench: $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[test,bench]'
	-VENV=$(VENV) bash benchmarks/setup_etcd.sh
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
