#!/usr/bin/env bash
# Description: a vhost worker per request queue (QEMU's
# worker_per_virtqueue=on, qemu/0002): with I/O on both request queues,
# each queue is polled by its own worker; each worker, pinned with taskset
# to a CPU, is found running there and sits in QEMU's cgroups; the
# written data verifies; 2 s after the I/O ends every worker is asleep at
# 0% CPU (issue 18: placement through the worker API, no thread of its own).
# timeout: 600
# vm: yes
set -uo pipefail
. "$(dirname "$0")/lib/vm.sh"
run_plan --modes sqcq-host-wpv --host-params "$spin_policy" --steps write,workers
show_host_checks
/usr/bin/python3 "$SQCQ_TOP/tests/lib/summary.py" "$out/run" \
	--expect sqcq-host-wpv:verify-write:poller.vq_work'>'100
