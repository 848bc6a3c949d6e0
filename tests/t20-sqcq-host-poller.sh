#!/usr/bin/env bash
# Description: the host SQ poller end to end.  Invalid vhost_scsi
# parameters are refused with a message naming them; with sqcq_poll=on and
# the project's modules the poller services the rings (fio verify=crc32c
# passes with the poller doing the work), sleeps when the guest idles
# (~0 CPU two seconds after I/O stops, no wakeups meanwhile), and the next
# kick wakes it.  Policy tuned so that spinning always pays (a 1 s
# ceiling) and the poller sleeps 200 us after the last request, to make the
# sleep/wake sequence deterministic.  The timed fio steps ask that the
# poller took every request (a share: the debug host VM ran 66 I/Os at
# QD1 in 5 s, where an absolute count of 100 failed).  The guest runs
# with every parameter at its default: its CQ poller measures what a sleep
# costs (sqcq_spin_max_us=auto), woken by interrupts for it at most every
# 100 ms (two queues over a 5 s step: ~100, far fewer than its interrupts),
# and not at all while the guest idles.  With the ceiling then set to 0
# (the host never spins: every kick is serviced inline), no LIO completion
# is steered to another CPU: the worker's CPU is not busy, so completions
# stay where they were submitted, as without polling; and the kick work
# does not yield to the completions (an inline kick is upstream's handler,
# one pass; the poll with an empty window yielded to about every second
# completion).
# timeout: 900
# vm: yes
set -uo pipefail
. "$(dirname "$0")/lib/vm.sh"
run_plan --modes sqcq-poll --check-bad-params \
	--host-params "sqcq_spin_max_us=1000000 debugfs:idle_timeout_us=200" --runtime 5 \
	--steps verify,pollers:1,rw:randread:32,idle:1,rw:randread:1,host-param:sqcq_spin_max_us=0,rw:randread:1
s=sqcq-poll
/usr/bin/python3 "$SQCQ_TOP/tests/lib/summary.py" "$out/run" \
	--expect $s:verify-write:poller.vq_work/ios'>='0.99 \
	--expect $s:randread-qd32-5:poller.vq_work/ios'>='0.99 \
	--expect $s:idle-6:poller.wakeups'<'1 \
	--expect $s:idle-6:poller.cpu_pct'<'1 \
	--expect $s:randread-qd1-7:poller.wakeups_by_kick'>'0.5 \
	--expect $s:randread-qd1-7:poller.vq_work/ios'>='0.99 \
	--expect $s:randread-qd1-7:guest_poller.cost_ns'>'0 \
	--expect $s:randread-qd1-7:guest_poller.wakeups_by_irq'>'0.5 \
	--expect $s:randread-qd1-7:guest_poller.cost_wakeups'<'130 \
	--expect $s:idle-6:guest_poller.wakeups'<'1 \
	--expect $s:randread-qd1-9:poller.vq_inline_kicks/ios'>'0.9 \
	--expect $s:randread-qd1-9:poller.steered'<'1 \
	--expect $s:randread-qd1-9:poller.yields/ios'<'0.05
