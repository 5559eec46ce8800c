# The user's path end to end in a software-emulated VM (issue: vagrant up && make lab-mtu).
# Not part of `make test` or .ci/run: about an hour on a 2-core machine without KVM
# (stage times in README.md); run it before changing the appliance.
#
#   make test-vm        vagrant/test-vm.sh: box, vagrant up, kernel switch, idempotent
#                       re-provisioning, make lab-mtu (quick) in the VM, results, destroy
#   make vm-box         vagrant/build-box.sh --add: only the offline Debian 12 libvirt box
.PHONY: test-vm vm-box

test-vm:
	vagrant/test-vm.sh

vm-box:
	vagrant/build-box.sh --add
