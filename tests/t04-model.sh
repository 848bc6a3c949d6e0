#!/usr/bin/env bash
# Description: the NEED_WAKEUP handshake models under spin, submission side
# (tests/model/sq.pml: guest kicks, the host's poll in the vq's kick work,
# other work on the worker, a stop with a kick pending, a VM stop with the
# endpoint cleared and set again, the early return of vhost_enable_notify())
# and completion side (tests/model/cq.pml:
# device interrupts, guest CQ poller).  The protocol must never strand a
# request; each mutation that removes one full barrier, the re-check, the
# poll's requeue behind other work, the hand back's unconditional
# re-enable (-DOLD_HAND_BACK, a bug a review found) or the CQ side's
# wake-pending check must
# produce a counterexample (if a mutation passes, the model cannot see the
# bug it exists to catch).  Removing the requeue on stop must too (the
# stop then waits for a guest kick to hand the vq back), but not when only
# delivery is checked: the design does not rely on it for that.
# timeout: 300
set -uo pipefail
. "$(dirname "$0")/../scripts/lib/common.sh"
out=${SQCQ_TEST_OUT:?}
need_cmd spin gcc
fail=0

# check MODEL NAME EXPECT(pass|fail) [-Dmacro]
check() {
	local model=$SQCQ_TOP/tests/model/$1.pml name=$2 expect=$3 d=$out/$2
	shift 3
	mkdir -p "$d"
	(cd "$d" && spin -a "$@" "$model" >spin.log 2>&1 &&
		gcc -O2 -DSAFETY -o pan pan.c >>spin.log 2>&1 &&
		timeout 120 ./pan -m100000 >pan.log 2>&1)
	local errors
	errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$d/pan.log")
	if [ -z "$errors" ]; then
		echo "FAIL: $name: spin/pan did not run (logs in $d)"; fail=1; return
	fi
	local states
	states=$(sed -n 's/^ *\([0-9e+.]*\) states, stored.*/\1/p' "$d/pan.log")
	if [ "$expect" = pass ] && [ "$errors" = 0 ]; then
		echo "ok: $name: no counterexample ($states states)"
	elif [ "$expect" = fail ] && [ "$errors" != 0 ]; then
		echo "ok: $name: counterexample found as expected ($(grep -m1 -E 'assertion violated|invalid end state' "$d/pan.log"))"
	else
		echo "FAIL: $name: expected $expect, pan reported $errors errors (log: $d/pan.log)"; fail=1
	fi
}
check sq sq-protocol pass
check sq sq-no-guest-mb fail -DNO_GUEST_MB
check sq sq-no-host-mb fail -DNO_HOST_MB
check sq sq-no-recheck fail -DNO_RECHECK
check sq sq-no-yield-requeue fail -DNO_YIELD_REQUEUE
check sq sq-old-hand-back fail -DOLD_HAND_BACK
check sq sq-no-stop-requeue fail -DNO_STOP_REQUEUE
# Not load-bearing for delivery: every run of the kick work requeues itself
# or ends with notifications on (tests/model/sq.pml).
check sq sq-delivery-no-stop-requeue pass -DNO_STOP_REQUEUE -DDELIVERY_ONLY
check cq cq-protocol pass
check cq cq-no-device-mb fail -DNO_DEVICE_MB
check cq cq-no-guest-mb fail -DNO_GUEST_MB
check cq cq-no-wake-pending fail -DNO_WAKE_PENDING
exit $fail
