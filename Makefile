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
#   make kernel     a whole 6.12 kernel with the series in tree and debug
#                   options (lockdep, KASAN, kmemleak, ...), cached
#   make reliability  the VM tests on that kernel, table at the end
#   make clean      remove build/ (caches in $(SQCQ_CACHE) stay)

include scripts/versions.env
SQCQ_CACHE ?= /var/cache/sqcq
export SQCQ_CACHE

.PHONY: all deps modules qemu initramfs test check matrix patches kernel reliability clean
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
	scripts/build-kernel.sh

reliability: deps modules qemu initramfs
	scripts/reliability.py $(RELIABILITY_ARGS)

clean:
	rm -rf build
