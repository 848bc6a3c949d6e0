#!/usr/bin/env bash
# Description: the guest CQ pollers end to end, with the host SQ poller.
# With both pollers on (policy tuned so that spinning always pays; the
# host sleeps 200 us after its last work, the guest 5 ms), fio
# verify=crc32c passes; there is one SCHED_IDLE poller per request queue,
# allowed only on the CPUs blk-mq maps to it (cq-per-queue); fio pinned to
# a vCPU has its completions reaped by that CPU's queue poller and by no
# other (cq-local); beside a CPU hog the poller is kept off its CPU and the
# completions come by interrupt (cq-hog); the guest's ceiling changed while
# the pollers run takes effect, 0 leaving every completion to the interrupt
# and 1000000 having the pollers reap (cq-param); both pollers sleep when the guest
# idles (no wakeups, ~0 CPU); the next I/O wakes the CQ poller through the
# re-armed interrupt (NEED_WAKEUP) and the SQ poller through a kick.
# Invalid guest parameters are refused.
# timeout: 900
# vm: yes
set -uo pipefail
. "$(dirname "$0")/lib/vm.sh"
gp="sqcq_spin_max_us=1000000 debugfs:idle_timeout_us=5000"
run_plan --modes sqcq-poll --guest-params "$gp" --check-guest-bad-params \
	--host-params "sqcq_spin_max_us=1000000 debugfs:idle_timeout_us=200" --runtime 5 \
	--steps verify,cq-per-queue,cq-local,cq-hog,cq-param,rw:randread:32,idle:1,rw:randread:1
/usr/bin/python3 "$SQCQ_TOP/tests/lib/summary.py" "$out/run" \
	--expect sqcq-poll:bad-guest-params:rc'<'0.5 \
	--expect sqcq-poll:randread-qd32-8:guest_poller.reaped_per_io'>'0.1 \
	--expect sqcq-poll:idle-9:poller.wakeups'<'1 \
	--expect sqcq-poll:idle-9:guest_poller.wakeups'<'1 \
	--expect sqcq-poll:idle-9:guest_poller.cpu_pct'<'1 \
	--expect sqcq-poll:randread-qd1-10:guest_poller.wakeups_by_irq'>'0.5 \
	--expect sqcq-poll:randread-qd1-10:poller.wakeups_by_kick'>'0.5
