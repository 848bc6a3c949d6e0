# shellcheck shell=bash
# Helpers for tests that run a plan on the host role (VMs).
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/common.sh"
out=${SQCQ_TEST_OUT:?run tests through tests/run.sh}

# Module parameters under which both pollers spin whenever I/O flows
# (a 1 s ceiling) and sleep 200 us after it stops: faults then hit the
# polling path, not the inline kick path the default policy falls back to.
spin_policy="sqcq_spin_max_us=1000000 debugfs:idle_timeout_us=200"

# run_plan MKPLAN-ARGS...: build a plan and run it; leaves $out/run.  An
# emulator hang or death is run once more, loudly (tests/lib/run-plan-retry.sh).
run_plan() {
	local rc
	/usr/bin/python3 "$SQCQ_TOP/scripts/mkplan.py" -o "$out/plan.json" "$@"
	rc=$?
	# 3: the guest kernel has the series built in and the plan needs a
	# module (the stock driver, an insmod): skipped, loudly.
	[ $rc = 3 ] && { echo "SKIP: not on a guest kernel with the series built in (SQCQ_GUEST_KERNEL=$SQCQ_GUEST_KERNEL)"; exit 77; }
	[ $rc = 0 ] || { echo "FAIL: could not build the plan"; exit 1; }
	"$SQCQ_TOP/tests/lib/run-plan-retry.sh" "$out/plan.json" "$out/run" "$out/warnings"
	rc=$?
	echo "run-plan exited $rc"
	# (a step's warning, e.g. a guest booted again, reaches the test's TAP
	# line through tests/lib/summary.py, which every test runs next)
}

# use_tmp_checkout: run this test's plans from a copy of the tree under
# /tmp, as a user who clones into /tmp does (the project's files, committed
# or not; build outputs stay shared through SQCQ_BUILD, so nothing is
# rebuilt).  The host VM then keeps /tmp as its read-only shared root, for
# the checkout to stay visible (scripts/vm/l1-init.sh): a host command that
# writes a literal /tmp path fails there.  The copy goes when the test ends.
use_tmp_checkout() {
	local d
	case "$SQCQ_TOP/" in
	/tmp/*) echo "the checkout is already under /tmp: $SQCQ_TOP"; return 0 ;;
	esac
	# (a literal /tmp on purpose: that is the case under test)
	d=$(mktemp -d /tmp/sqcq-checkout.XXXXXX) || { echo "FAIL: cannot make a directory under /tmp"; exit 1; }
	# shellcheck disable=SC2064 # expand $d now
	trap "rm -rf '$d'" EXIT
	if git -C "$SQCQ_TOP" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git -C "$SQCQ_TOP" ls-files -z --cached --others --exclude-standard |
			tar -C "$SQCQ_TOP" --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -C "$d" -xf -
	else
		tar -C "$SQCQ_TOP" --exclude=./build --exclude=./results -cf - . | tar -C "$d" -xf -
	fi
	[ -x "$d/scripts/run-plan.sh" ] || { echo "FAIL: copying the tree to $d failed"; exit 1; }
	echo "running from a copy of the tree under /tmp: $d (build outputs: $SQCQ_BUILD)"
	SQCQ_TOP=$d
}

# build_vhostdrv: compile the userspace vhost driver (tests/vhostdrv) into
# $SQCQ_BUILD/tools/vhostdrv and set $tool to it.
build_vhostdrv() {
	tool=$SQCQ_BUILD/tools/vhostdrv
	mkdir -p "$(dirname "$tool")"
	gcc -O2 -Wall -Wextra -Werror -pthread -o "$tool" "$SQCQ_TOP/tests/vhostdrv/vhostdrv.c" ||
		{ echo "FAIL: vhostdrv does not build"; exit 1; }
}

# show_host_checks: print what the plan's host checks printed (TAP lines).
show_host_checks() {
	/usr/bin/python3 - "$out/run/summary.json" <<'PY'
import json, sys
try:
    s = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    sys.exit(0)
for st in s["steps"]:
    if st["step"].startswith(("host-check", "host-pre")):
        print(st.get("output", ""))
PY
}
