# SQ/CQ doorbell polling for vhost-scsi: top-level entry points.
#
#   make matrix     the main job: fio matrix on nested VMs, table at the end
#   make test       the tests (TAP); both install what they need first
#
#   make deps       Debian packages (root)
#   make modules    vhost_scsi.ko + virtio_scsi.ko, out of tree (KDIR=, KSRC=)
#   make qemu       minimal QEMU 7.2 with the qemu/ series (cached)
#   make check      tests that need no VM
#   make patches    the series for upstream: format-patch + cover letter,
#                   checkpatch --strict and a build at every patch
#   make kernel     whole 6.12 kernels with the series in tree, cached, by
#                   name (KERNEL=host guest debug, the default all three):
#                   a KVM host's, the nested guest's (the series built in)
#                   and the debug one (lockdep, KASAN, kmemleak, ...)
#   make reliability  the VM tests on the debug kernel, table at the end
#   make kernel-test  the tests that boot the nested guest on the guest
#                   kernel (suite kernel; TESTS= a subset), after building it
#   make clean      remove build/ (caches in $(SQCQ_CACHE) stay)

include scripts/versions.env
SQCQ_CACHE ?= /var/cache/sqcq
export SQCQ_CACHE

KERNEL ?= host guest debug

.PHONY: all deps modules qemu initramfs test check matrix patches kernel kernel-test reliability clean
all: modules

deps:
	scripts/deps.sh

modules:
	scripts/build-modules.sh

# One QEMU build: the nested guests' (KVM, qemu/series) and the host VM's
# emulator under TCG (qemu/l0/series); the second call finds it built.
qemu:
	scripts/build-qemu.sh
	scripts/build-qemu.sh --l0

initramfs: modules
	scripts/guest/mkinitramfs.sh

test: deps modules qemu initramfs
	tests/run.sh $(TESTS)

check:
	tests/run.sh --unit

matrix: deps modules qemu initramfs
	scripts/matrix.py $(MATRIX_ARGS)

patches:
	scripts/mkpatches.py $(PATCHES_ARGS)

kernel: deps
	for k in $(KERNEL); do scripts/build-kernel.sh --config $$k || exit 1; done

kernel-test: deps modules qemu initramfs
	scripts/build-kernel.sh --config guest
	tests/run.sh --suite kernel $(TESTS)

reliability: deps modules qemu initramfs
	scripts/reliability.py $(RELIABILITY_ARGS)

clean:
	rm -rf build
