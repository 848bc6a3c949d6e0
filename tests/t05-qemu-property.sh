#!/usr/bin/env bash
# Description: the project's QEMU build lists the sqcq_poll property of
# vhost-scsi-pci (default off), and the stock Debian QEMU does not.
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
