#!/usr/bin/env bash
# Description: the CQ poller survives a suspend/resume cycle with I/O in
# flight.  With both pollers running, fio writes and verifies (crc32c) a
# scratch region while the guest suspends to idle with pm_test=devices
# (virtio freeze: the poller stops and hands the rings back; restore: a new
# poller starts), then data written before the cycle verifies again.  The
# poller must be a new thread afterwards and both kernels' logs clean.
# timeout: 900
# vm: yes
set -uo pipefail
. "$(dirname "$0")/lib/vm.sh"
run_plan --modes sqcq-poll --steps write,suspend,reverify,pollers:1
/usr/bin/python3 "$SQCQ_TOP/tests/lib/summary.py" "$out/run"
