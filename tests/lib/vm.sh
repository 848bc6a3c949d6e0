# shellcheck shell=bash
# Helpers for tests that run a plan on the host role (VMs).
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/common.sh"
out=${SQCQ_TEST_OUT:?run tests through tests/run.sh}

# Module parameters under which both pollers spin whenever I/O flows
# (a 1 s ceiling) and sleep 200 us after it stops: faults then hit the
# polling path, not the inline kick path the default policy falls back to.
spin_policy="sqcq_spin_max_us=1000000 sqcq_idle_timeout_us=200"

# run_plan MKPLAN-ARGS...: build a plan and run it; leaves $out/run.  An
# emulator hang or death is run once more, loudly (tests/lib/run-plan-retry.sh).
run_plan() {
	local rc
	/usr/bin/python3 "$SQCQ_TOP/scripts/mkplan.py" -o "$out/plan.json" "$@" ||
		{ echo "FAIL: could not build the plan"; exit 1; }
	"$SQCQ_TOP/tests/lib/run-plan-retry.sh" "$out/plan.json" "$out/run" "$out/warnings"
	rc=$?
	echo "run-plan exited $rc"
	# (a step's warning, e.g. a guest booted again, reaches the test's TAP
	# line through tests/lib/summary.py, which every test runs next)
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
    if st["step"].startswith("host-check"):
        print(st.get("output", ""))
PY
}
