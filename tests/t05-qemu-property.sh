#!/usr/bin/env bash
# Description: the project's QEMU build lists the sqcq_poll and
# worker_per_virtqueue properties of vhost-scsi-pci (default off), and the
# stock Debian QEMU does not list sqcq_poll; the
# host VM's emulator (build-qemu.sh --l0) is TCG built with every fix of
# qemu/l0/series (CPU 0's lost hflags2 updates, the injected interrupt
# delivered twice), and host-vm.sh picks it; both are one build (KVM and
# TCG in one binary: one QEMU build on a fresh machine, issue 21).
# timeout: 900
set -uo pipefail
. "$(dirname "$0")/../scripts/lib/common.sh"
qemu=$("$SQCQ_TOP/scripts/build-qemu.sh" --print-path) || { echo "FAIL: QEMU build failed"; exit 1; }
help=$("$qemu" -device vhost-scsi-pci,help 2>&1)
line=$(echo "$help" | grep -E '^ *sqcq_poll=') ||
	{ echo "FAIL: $qemu -device vhost-scsi-pci,help does not list sqcq_poll"; echo "$help"; exit 1; }
echo "project QEMU: $line"
echo "$line" | grep -q 'default: false' || { echo "FAIL: sqcq_poll must default to off"; exit 1; }
if /usr/bin/qemu-system-x86_64 -device vhost-scsi-pci,help 2>&1 | grep -q sqcq_poll; then
	echo "FAIL: the stock QEMU lists sqcq_poll: the test cannot tell the builds apart"; exit 1
fi
echo "stock QEMU: no sqcq_poll (as expected)"
wpv=$(echo "$help" | grep -E '^ *worker_per_virtqueue=') ||
	{ echo "FAIL: $qemu -device vhost-scsi-pci,help does not list worker_per_virtqueue (qemu/0002)"; exit 1; }
echo "$wpv" | grep -q 'default: false' || { echo "FAIL: worker_per_virtqueue must default to off"; exit 1; }
echo "project QEMU: $wpv"

# The host VM's emulator under TCG.
l0=$("$SQCQ_TOP/scripts/build-qemu.sh" --l0 --print-path) || { echo "FAIL: the host VM's emulator (build-qemu.sh --l0) did not build"; exit 1; }
ver=$("$l0" -version 2>&1 | sed -n 's/^QEMU emulator version //p')
[ -n "$ver" ] || { echo "FAIL: $l0 -version printed no version"; exit 1; }
"$l0" -accel help 2>&1 | grep -qx tcg || { echo "FAIL: $l0 has no TCG accelerator"; exit 1; }
# Every fix of qemu/l0/series is in the source the binary was built from
# (a patch reverses cleanly only where it was applied).
src=$(dirname "$l0")/src
n=0
for p in $(grep -v '^#' "$SQCQ_TOP/qemu/l0/series" | sed '/^$/d'); do
	patch -d "$src" -p1 -R -f --fuzz=0 --dry-run -s <"$SQCQ_TOP/qemu/l0/$p" >/dev/null 2>&1 ||
		{ echo "FAIL: $src lacks qemu/l0/$p"; exit 1; }
	n=$((n + 1))
done
[ $n -ge 2 ] || { echo "FAIL: qemu/l0/series lists $n fixes, expected the hflags2 and EVENTINJ ones"; exit 1; }
echo "host VM emulator: QEMU $ver, $l0, with the $n fixes of qemu/l0"
[ "$(dirname "$qemu")" = "$(dirname "$l0")/build" ] ||
	{ echo "FAIL: two QEMU builds: $qemu for the guests, $l0 for the host VM"; exit 1; }
"$qemu" -accel help 2>&1 | grep -qx kvm || { echo "FAIL: $qemu has no KVM accelerator"; exit 1; }
echo "one build: $(dirname "$qemu") serves the nested guests (KVM) and the host VM (TCG)"
grep -q 'build-qemu.sh" --l0 --print-path' "$SQCQ_TOP/scripts/vm/host-vm.sh" ||
	{ echo "FAIL: scripts/vm/host-vm.sh does not default to the --l0 build"; exit 1; }
