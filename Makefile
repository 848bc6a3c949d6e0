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
#   make clean      remove build/ (caches in $(SQCQ_CACHE) stay)

include scripts/versions.env
SQCQ_CACHE ?= /var/cache/sqcq
export SQCQ_CACHE

.PHONY: all deps modules qemu initramfs test check matrix patches clean
all: modules

deps:
	scripts/deps.sh

modules:
	scripts/build-modules.sh

qemu:
	scripts/build-qemu.sh

initramfs: modules
	scripts/guest/mkinitramfs.sh

test: deps modules qemu initramfs
	tests/run.sh $(TESTS)

check:
	tests/run.sh --unit

matrix: deps modules qemu initramfs
	scripts/matrix.py $(MATRIX_ARGS)

patches:
	scripts/mkpatches.py

clean:
	rm -rf build
