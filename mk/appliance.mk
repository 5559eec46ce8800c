# mptcplab appliance: Vagrantfile, ansible/, images/, docker-compose.yml (docs/appliance.md).
# Included by the top-level Makefile; nothing here is named test or lab-%.
#
#   make test-appliance          every appliance check (tests/appliance, marker `appliance`)
#   make appliance-images        build mptcplab/{host,router,jupyter} with no registry
#   make appliance-kernel-check  the kernel patches against the pinned source
#   make kernel-deb              the patched kernel as .deb packages, for the VM's prebuilt mode
#                                (KERNEL_DEB_ARGS=--prepare-only: the tree only; --dry-run)
#   make kernel-boot-check       boot those packages' kernel under QEMU: uname, one MPTCP
#                                connection, the patch's kernel-log line (a minute, no VM)
#   make appliance-lint          ansible-lint and the playbook's syntax check
#   make appliance-validate      vagrant validate
#   make appliance-clean         remove the appliance images (the campaign hosts' too) and caches
VENV ?= .venv
APPLIANCE_PYTEST_ARGS ?=
APPLIANCE_CACHE ?= /var/cache/mptcplab
KERNEL_DEB_ARGS ?=

.PHONY: test-appliance appliance-deps appliance-dockerd appliance-images \
        appliance-kernel-check appliance-lint appliance-validate appliance-containerlab \
        appliance-clean kernel-deb kernel-boot-check

appliance-deps:
	@tests/appliance/host-deps.sh

appliance-dockerd: appliance-deps
	@tests/appliance/ensure-dockerd.sh

test-appliance: bootstrap-test appliance-dockerd
	@tests/appliance/ensure-libvirtd.sh
	$(VENV)/bin/python -m pytest -q -rs -m appliance -p no:cacheprovider --durations=12 tests/appliance $(APPLIANCE_PYTEST_ARGS)

appliance-images: appliance-dockerd
	images/build.sh --offline

appliance-containerlab:
	@images/containerlab-build.sh

appliance-kernel-check: appliance-deps
	images/kernel/check.sh

kernel-deb:
	images/kernel/build-deb.sh $(KERNEL_DEB_ARGS)

kernel-boot-check:
	images/kernel/boot-check.sh

appliance-lint: appliance-deps
	cd ansible && ansible-lint --offline && ansible-playbook --syntax-check site.yml

appliance-validate: appliance-deps
	d=$$(mktemp -d); VAGRANT_DOTFILE_PATH=$$d vagrant validate --ignore-provider; rc=$$?; rm -rf $$d; exit $$rc

# the campaign pool test's hosts first (tests/appliance/test_campaign_pool_docker.py; one tag per content
# hash, built FROM mptcplab/host)
appliance-clean:
	-docker image ls --format '{{.Repository}}:{{.Tag}}' mptcplab/campaign-host | xargs -r docker image rm
	-docker image rm mptcplab/jupyter:latest mptcplab/router:latest mptcplab/host:latest mptcplab/debian-base:bookworm
	-docker image prune -f --filter label=org.mptcplab.image
	rm -rf $(APPLIANCE_CACHE)
