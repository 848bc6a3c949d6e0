#!/usr/bin/env bash
# Description: faults with verified I/O in flight, both pollers running.
# A guest writes data with crc32c checksums, then, each time with fio
# writing and verifying a scratch region: rmmod vhost_scsi is attempted
# (must be refused, the I/O must verify), the host's CPU 1 goes offline
# for 3 s and comes back (I/O must verify), and finally its QEMU is killed
# with SIGKILL (the poller thread and its debugfs entry must be gone within
# 10 s).  A second guest then re-verifies the data written before the
# faults and must get a running poller; rmmod vhost_scsi must succeed at
# the end, and both kernels' logs must stay clean.
# Both pollers spin while I/O flows (spin_policy, tests/lib/vm.sh), so the
# faults hit the polling path; the first write must show them working.
# timeout: 900
# vm: yes
set -uo pipefail
. "$(dirname "$0")/lib/vm.sh"
run_plan --modes sqcq-poll --host-params "$spin_policy" --guest-params "$spin_policy" --steps write,rmmod-busy,cpu-offline,kill-qemu --then reverify,pollers:1
/usr/bin/python3 "$SQCQ_TOP/tests/lib/summary.py" "$out/run" \
	--expect sqcq-poll:verify-write:poller.vq_work'>'100 \
	--expect sqcq-poll:verify-write:guest_poller.wakeups'>'10
