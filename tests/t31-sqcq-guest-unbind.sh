#!/usr/bin/env bash
# Description: the CQ poller stops cleanly when the device goes away with
# I/O in flight.  With both pollers running and fio writing (verify=crc32c)
# in the background, the guest unbinds virtio_scsi from the device (remove
# path: the poller hands the rings back to interrupts before commands are
# drained), binds it again (probe: new pollers, one per request queue on its
# CPUs: cq-per-queue), and fio verify passes on
# the re-attached disk for data written before the unbind.  Both kernels'
# logs must stay clean.
# timeout: 900
# vm: yes
set -uo pipefail
. "$(dirname "$0")/lib/vm.sh"
run_plan --modes sqcq-poll --steps write,unbind-rebind,reverify,cq-per-queue,pollers:1
/usr/bin/python3 "$SQCQ_TOP/tests/lib/summary.py" "$out/run"
