# trine: the two commands a newcomer needs are `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench setup clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test,spark,bench]'
	touch $(STAMP)

setup: $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest -q

# The main job on bundled data (no ../shared needed): generated LUBM(1) plus
# the univ-bench ontology, materialised, updated and queried through the CLI.
DEMO := .demo
DEMO_DB := $(DEMO)/lubm1.trine
demo: $(STAMP)
	@rm -rf $(DEMO) && mkdir -p $(DEMO)
	@echo "== load LUBM(1) (generated) + ontology, materialise in-process"
	$(BIN)/trine load $(DEMO_DB) fixtures/lubm1-gen.nt.gz fixtures/univ-bench.nt --engine local
	$(BIN)/trine stats $(DEMO_DB)
	@echo "== LUBM query 6 (all students; needs the subClassOf reasoning)"
	$(BIN)/trine query $(DEMO_DB) 'PREFIX ub: <http://swat.cse.lehigh.edu/onto/univ-bench.owl#> SELECT (COUNT(*) AS ?students) WHERE { ?x a ub:Student }' --format table
	@echo "== remove one department, then add it back"
	@zcat fixtures/lubm1-gen.nt.gz | grep 'Department0\.University0\.edu' > $(DEMO)/dept0.nt
	$(BIN)/trine dump $(DEMO_DB) --annotate > $(DEMO)/before.nt
	$(BIN)/trine remove $(DEMO_DB) $(DEMO)/dept0.nt
	$(BIN)/trine query $(DEMO_DB) 'PREFIX ub: <http://swat.cse.lehigh.edu/onto/univ-bench.owl#> SELECT (COUNT(*) AS ?students) WHERE { ?x a ub:Student }' --format table
	$(BIN)/trine add $(DEMO_DB) $(DEMO)/dept0.nt
	$(BIN)/trine dump $(DEMO_DB) --annotate > $(DEMO)/after.nt
	cmp $(DEMO)/before.nt $(DEMO)/after.nt && echo "annotated dump identical after remove + re-add"
	$(BIN)/trine check $(DEMO_DB) --deep

bench: $(STAMP)
	$(BIN)/python -m bench.run $(BENCH_ARGS)

clean:
	rm -rf $(VENV) $(DEMO) build *.egg-info
