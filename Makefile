# clirlib: reproduce "Cross-Lingual Document Retrieval with Smooth Learning".
# `make help` lists the targets. Every target that runs clirlib creates the virtual environment
# first when it is missing, so a fresh clone needs nothing but Python 3.11 and make.

.DEFAULT_GOAL := help
SHELL := /bin/bash

PYTHON_SYS ?= python3
VENV       ?= .venv
PY         := $(VENV)/bin/python
STAMP      := $(VENV)/.installed
KERNEL     := clirlib

# Where the CPU build of torch comes from (PyPI's own torch wheel for Linux is a CUDA build;
# 2.13.0+cpu from this index sorts above it). Only torch itself is looked up there (--no-deps;
# its dependencies come from the usual indexes next). Unreachable offline: pip retries for a
# few seconds and takes a local wheel (find-links) if it has one.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
# Profile of the embedded benchmark for `make reproduce`: ci | default | paper.
PROFILE    ?= default
# Real data instead of the embedded benchmark: a WikiCLIR root (the folder holding wiki-clir/) or
# an ir_datasets id (irds:wikiclir/<lang>, irds:clirmatrix/...).
DATA       ?=
# FORCE=1 retrains every experiment instead of reading the shipped records (records/) and
# the results/ cache; an interrupted FORCE=1 run started again resumes. CLIRLIB_FORCE=1 in the
# environment does the same, and FORCE=0 does not turn it off. make reproduce checks it before
# anything is built (only there: a FORCE of another tool's in the environment leaves other targets be).
FORCE      ?= 0
ifneq ($(filter reproduce,$(MAKECMDGOALS)),)
ifneq ($(filter-out 0 1,$(FORCE)),)
$(error FORCE must be 0 or 1, got '$(FORCE)')
endif
endif
# JOBS: notebooks run at once (default: 2 reading records, 1 with FORCE=1 or CLIRLIB_FORCE=1, where each notebook's
# training uses both cores; JOBS=1 for a retrain without FORCE, e.g. after a change of settings).
JOBS       ?=
# make verify: how many shipped records to retrain, the seed of the draw, and STUDY=curves to
# draw from the learning curves' records (records/curves) instead of records/.
N          ?= 3
SEED       ?= 0
STUDY      ?=
# EXECUTOR=ray trains the grids' runs as Ray tasks; ADDRESS=<host:port> (or RAY_ADDRESS) joins a cluster.
# Empty: CLIRLIB_EXECUTOR, else serial.
EXECUTOR   ?=
ADDRESS    ?=

NOTEBOOKS  := $(sort $(wildcard notebooks/[0-9][0-9]_*.ipynb))
# make test runs pytest and nbval on two workers (pytest-xdist; --dist loadfile keeps a
# file's tests, and a notebook's cells, on one worker in order). nbval re-executes every
# notebook on the profile its committed parameters name (default, from records/) and
# compares every output cell, after tests/nbval_sanitize.cfg's sanitizers. A crashed worker
# ends the run (--max-worker-restart 0): with --dist loadfile, xdist can otherwise wait forever
# for the crashed worker's file (pytest-dev/pytest-xdist#784; docs/timings.md).
XDIST      ?= -n 2 --dist loadfile --max-worker-restart 0
# The two workers' torch threads outnumber the cores; OpenMP's default is to spin while it waits,
# which starves the other worker (an LSTM test many times slower beside another: docs/timings.md).
# Passive waits change no number, only how an idle thread waits.
SHARED     := OMP_WAIT_POLICY=PASSIVE

export PYTHONHASHSEED := 0
export MPLBACKEND     := Agg
# No per-run progress bars inside headless notebook runs (papermill, nbval); CLIRLIB_PROGRESS=1 shows them.
CLIRLIB_PROGRESS ?= 0
export CLIRLIB_PROGRESS

.PHONY: help venv reproduce verify records test test-fast bench ray-check clean-results clean

help: ## List the targets (default goal)
	@echo "clirlib make targets:"
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | \
	  awk 'BEGIN {FS = ":.*?## "}; {printf "  %-18s %s\n", $$1, $$2}'
	@echo "Variables: PROFILE=$(PROFILE) (ci|default|paper)  DATA=<wikiclir root>|irds:<id>  FORCE=1 (retrain)  JOBS=<notebooks at once>  EXECUTOR=serial|ray  ADDRESS=<ray head>"
	@echo "           verify: N=<records> SEED=<draw> STUDY=curves   bench: E5_PATH=<model dir>   venv: VENV=<dir> PYTHON_SYS=<python3.11>"

venv: $(STAMP) ## Create .venv with the pinned dependencies and the clirlib kernel

$(STAMP): requirements.txt pyproject.toml
	@test -x $(PY) || $(PYTHON_SYS) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --no-deps --extra-index-url $(TORCH_INDEX) torch==2.13.0
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -e .
	$(PY) -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "clirlib (.venv)" >/dev/null
	@touch $(STAMP)

reproduce: $(STAMP) ## Run every notebook headless (PROFILE, DATA, FORCE, JOBS, EXECUTOR, ADDRESS) and write figures/ and tables/
	$(PY) -m clirlib reproduce --profile $(PROFILE) $(if $(DATA),--data "$(DATA)") $(if $(filter 1,$(FORCE)),--force) $(if $(JOBS),--jobs $(JOBS)) $(if $(EXECUTOR),--executor $(EXECUTOR)) $(if $(ADDRESS),--address $(ADDRESS)) --kernel $(KERNEL)

verify: $(STAMP) ## Retrain N shipped records drawn with SEED and compare every metric (OK / OKISH / FAIL)
	$(PY) -m clirlib records verify -n $(N) --seed $(SEED) $(if $(STUDY),--study $(STUDY))

records: $(STAMP) ## Refresh the shipped run records (records/) from the local cache results/runs
	$(PY) -m clirlib records pack --profile default

test: $(STAMP) ## pytest over tests/ (ci profile), nbval comparing every notebook's outputs (default, from records/), a 3-record verify
	$(SHARED) $(PY) -m pytest -q $(XDIST) tests
	$(SHARED) $(PY) -m pytest -q $(XDIST) --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg -p no:cacheprovider $(NOTEBOOKS)
	@# make verify on 3 records drawn with seed 2 (LSTM/SOSL, average pooling/MSE, BM25: about
	@# 90 s); seed 0's draw holds a HIKE run of about 400 s, over make test's budget.
	$(MAKE) --no-print-directory verify N=3 SEED=2

test-fast: $(STAMP) ## Run pytest only (no notebooks)
	$(PY) -m pytest -q tests

bench: $(STAMP) ## Run the speed and memory benchmarks (E5_PATH=DIR: 4-bit e5 vs the full model); writes bench/results.md
	$(PY) bench/run_all.py $(if $(E5_PATH),--e5-path "$(E5_PATH)")

ray-check: $(STAMP) ## Reproduce ci serially and on a two-node loopback Ray cluster; compare tables/figures byte for byte (two ci runs: long)
	$(PY) bench/ray_identity.py --record


clean-results: ## Delete the local cache results/ (runs, e5 vectors: hours to encode again); reproduce then reads records/
	rm -rf results

clean: clean-results ## Also delete data/ (the generated benchmarks and a data/debian you built) and the virtual environment
	rm -rf data $(VENV)
