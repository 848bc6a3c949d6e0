#!/usr/bin/env bash
# Description: the CQ poller survives a suspend/resume cycle with I/O in
# flight.  With both pollers running, fio writes and verifies (crc32c) a
# scratch region while the guest suspends to idle with pm_test=devices
# (virtio freeze: the pollers stop and hand the rings back; restore: new
# pollers start), then data written before the cycle verifies again.  The
# pollers must be new threads afterwards, one per request queue on its
# CPUs (cq-per-queue), and both kernels' logs clean.
# timeout: 900
# vm: yes
set -uo pipefail
. "$(dirname "$0")/lib/vm.sh"
run_plan --modes sqcq-poll --steps write,suspend,reverify,cq-per-queue,pollers:1
/usr/bin/python3 "$SQCQ_TOP/tests/lib/summary.py" "$out/run"
