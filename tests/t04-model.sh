#!/usr/bin/env bash
# Description: the NEED_WAKEUP handshake model (tests/model/sqcq.pml) under
# spin: the real protocol must never strand a request, and each mutation
# that removes one side's full barrier must produce a counterexample (if a
# mutation passes, the model cannot see the bug it exists to catch).
# timeout: 300
set -uo pipefail
. "$(dirname "$0")/../scripts/lib/common.sh"
out=${SQCQ_TEST_OUT:?}
need_cmd spin gcc
model=$SQCQ_TOP/tests/model/sqcq.pml
fail=0

# check NAME EXPECT(pass|fail) [-Dmacro]
check() {
	local name=$1 expect=$2 d=$out/$1
	shift 2
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
check sq-protocol pass
check sq-no-guest-mb fail -DNO_GUEST_MB
check sq-no-host-mb fail -DNO_HOST_MB
check sq-no-wake-pending fail -DNO_WAKE_PENDING
exit $fail
