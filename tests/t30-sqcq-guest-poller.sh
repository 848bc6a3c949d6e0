#!/usr/bin/env bash
# Description: the guest CQ poller end to end, with the host SQ poller.
# With both pollers on (policy tuned so that spinning always pays and each
# side sleeps 200 us after its last work), fio verify=crc32c passes with
# the CQ poller reaping the completions; both pollers sleep when the guest
# idles (no wakeups, ~0 CPU); the next I/O wakes the CQ poller through the
# re-armed interrupt (NEED_WAKEUP) and the SQ poller through a kick.  Then
# the same with io_uring --hipri on poll queues (poll-sqcq): the CQ poller
# leaves the poll queues to blk-mq.  Invalid guest parameters are refused.
# timeout: 900
# vm: yes
set -uo pipefail
. "$(dirname "$0")/lib/vm.sh"
gp="sqcq_spin_max_us=1000000 debugfs:idle_timeout_us=200"
run_plan --modes sqcq-poll --guest-params "$gp" --check-guest-bad-params \
	--host-params "sqcq_spin_max_us=1000000 debugfs:idle_timeout_us=200" --runtime 5 \
	--steps verify,rw:randread:32,idle:1,rw:randread:1
/usr/bin/python3 "$SQCQ_TOP/tests/lib/summary.py" "$out/run" \
	--expect sqcq-poll:bad-guest-params:rc'<'0.5 \
	--expect sqcq-poll:verify-write:guest_poller.vq_reaped'>'1000 \
	--expect sqcq-poll:randread-qd32-4:guest_poller.vq_reaped'>'1000 \
	--expect sqcq-poll:idle-5:poller.wakeups'<'1 \
	--expect sqcq-poll:idle-5:guest_poller.wakeups'<'1 \
	--expect sqcq-poll:idle-5:guest_poller.cpu_pct'<'1 \
	--expect sqcq-poll:randread-qd1-6:guest_poller.wakeups_by_irq'>'0.5 \
	--expect sqcq-poll:randread-qd1-6:poller.wakeups_by_kick'>'0.5
