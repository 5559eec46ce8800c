# mptcplab: the two commands of the README are `make lab-mtu` and `make test`.
# Both install what they need on first use (scripts/bootstrap.sh).
SHELL := /bin/bash
VENV := .venv
MPTCPLAB := $(VENV)/bin/mptcplab
RUN_ARGS ?=

.PHONY: bootstrap bootstrap-test native test test-unit test-integration lab-% dry-run-% doctor clean bench

bootstrap:
	@scripts/bootstrap.sh

bootstrap-test:
	@scripts/bootstrap.sh --test

native:
	@$(MAKE) -s -C native

# Every lab: make lab-<name> [RUN_ARGS="--quick"]
lab-%: bootstrap
	$(MPTCPLAB) run labs/$* $(RUN_ARGS)

dry-run-%: bootstrap
	$(MPTCPLAB) run labs/$* --dry-run $(RUN_ARGS)

doctor: bootstrap
	$(MPTCPLAB) doctor

test: bootstrap-test
	$(VENV)/bin/python -m pytest -q -rs tests/unit tests/integration

test-unit: bootstrap-test
	$(VENV)/bin/python -m pytest -q tests/unit

clean:
	-$(MPTCPLAB) clean

bench: bootstrap-test
	$(VENV)/bin/python bench/deploy_bench.py

-include mk/*.mk
