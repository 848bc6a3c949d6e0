#!/usr/bin/env bash
# Description: the guest resets itself (sysrq b, no shutdown) while fio
# writes, both pollers running, in the same QEMU: QEMU stops vhost with
# requests in flight (the endpoint is cleared under the poller), the guest
# boots again and its driver starts the device anew.  Exactly one host
# poller must serve it afterwards, the guest's CQ pollers must be
# back, one per request queue on its CPUs, the data written before the reset must
# verify, rmmod vhost_scsi must succeed at the end and the logs stay clean.
# Both pollers spin while I/O flows (spin_policy, tests/lib/vm.sh).
# timeout: 900
# vm: yes
set -uo pipefail
. "$(dirname "$0")/lib/vm.sh"
run_plan --modes sqcq-poll --host-params "$spin_policy" --guest-params "$spin_policy" \
	--steps write,guest-reset,reverify,cq-per-queue,pollers:1
/usr/bin/python3 "$SQCQ_TOP/tests/lib/summary.py" "$out/run" \
	--expect sqcq-poll:verify-write:poller.vq_work'>'100 \
	--expect sqcq-poll:verify-write:guest_poller.wakeups'>'10
