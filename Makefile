# mptcplab: the two commands of the README are `make lab-mtu` and `make test`.
# Both install what they need on first use (scripts/bootstrap.sh).
SHELL := /bin/bash
VENV := .venv
MPTCPLAB := $(VENV)/bin/mptcplab
RUN_ARGS ?=

.PHONY: bootstrap bootstrap-test native lint test test-unit test-integration lab-% lab-%-paper dry-run-% doctor clean bench

bootstrap:
	@scripts/bootstrap.sh

bootstrap-test:
	@scripts/bootstrap.sh --test

native:
	@$(MAKE) -s -C native

# Every lab: make lab-<name> [RUN_ARGS="--quick"].
# A lab's "paper" subset (experiment.yml `subsets: paper`, docs/lab-format.md): make lab-<name>-paper,
# the same as make lab-<name> RUN_ARGS="--subset paper" (RUN_ARGS still adds to it).
# Where it runs: inside the Vagrant VM when this checkout's VM is up (vagrant/run-lab.sh
# brings the results back to results/ here); else here, on the netns backend, when this
# host's kernel has MPTCP; else it says what to do.
VM_ID := $(wildcard .vagrant/machines/*/*/id)
# $(1): the lab's name, $(2): the arguments of mptcplab run
define run-lab
	@if [ -z "$$MPTCPLAB_IN_VM" ] && [ -n "$(VM_ID)" ] && vagrant status --machine-readable 2>/dev/null | grep -q ',state,running'; then \
	  vagrant/run-lab.sh $(1) $(2); \
	elif [ "$$(cat /proc/sys/net/mptcp/enabled 2>/dev/null)" = 1 ]; then \
	  scripts/bootstrap.sh && $(MPTCPLAB) run labs/$(1) $(2); \
	else \
	  echo "lab $(1): this host's kernel has no MPTCP (net.mptcp.enabled) and no VM of this checkout is running."; \
	  echo "  Either run 'vagrant up' (see docs/appliance.md), or use a Linux 5.6+ kernel with MPTCP."; \
	  exit 3; \
	fi
endef

# the longer pattern wins for lab-rcvbuf-paper (GNU make: the shortest stem)
lab-%-paper:
	$(call run-lab,$*,--subset paper $(RUN_ARGS))

lab-%:
	$(call run-lab,$*,$(RUN_ARGS))

dry-run-%: bootstrap
	$(MPTCPLAB) run labs/$* --dry-run $(RUN_ARGS)

doctor: bootstrap
	$(MPTCPLAB) doctor

# ruff and mypy, configured in pyproject.toml ([tool.ruff], [tool.mypy]: mptcplab, bench, tests)
lint: bootstrap-test
	$(VENV)/bin/ruff check
	$(VENV)/bin/mypy

test: bootstrap-test lint
	$(VENV)/bin/python -m pytest -q -rs tests/unit tests/integration tests/faults

test-unit: bootstrap-test
	$(VENV)/bin/python -m pytest -q tests/unit

clean:
	-$(MPTCPLAB) clean

bench: bootstrap-test
	$(VENV)/bin/python bench/deploy_bench.py

-include mk/*.mk
