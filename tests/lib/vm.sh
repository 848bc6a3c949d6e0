# shellcheck shell=bash
# Helpers for tests that run a plan on the host role (VMs).
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/common.sh"
out=${SQCQ_TEST_OUT:?run tests through tests/run.sh}

# run_plan MKPLAN-ARGS...: build a plan and run it; leaves $out/run.
#
# Under TCG the host VM can hang with both CPUs idle and interrupts
# enabled while nothing is delivered (docs/design.md, "Running on TCG");
# its watchdog then leaves a post-mortem and l1-hung.  That run is kept as
# $out/run.hung, a warning goes to $out/warnings (tests/run.sh prints it
# on the test's line) and the plan runs once more.  Any other failure, or
# a second hang, stands.
run_plan() {
	local rc
	/usr/bin/python3 "$SQCQ_TOP/scripts/mkplan.py" -o "$out/plan.json" "$@" ||
		{ echo "FAIL: could not build the plan"; exit 1; }
	"$SQCQ_TOP/scripts/run-plan.sh" --timeout "${PLAN_TIMEOUT:-900}" "$out/plan.json" "$out/run"
	rc=$?
	if [ $rc != 0 ] && [ -f "$out/run/l1-hung" ] && [ ! -e "$out/run.hung" ]; then
		mv "$out/run" "$out/run.hung"
		echo "host VM hung (emulator; post-mortem: $out/run.hung/l1-hang-dump.txt); the plan ran once more" |
			tee -a "$out/warnings"
		"$SQCQ_TOP/scripts/run-plan.sh" --timeout "${PLAN_TIMEOUT:-900}" "$out/plan.json" "$out/run"
		rc=$?
	fi
	echo "run-plan exited $rc"
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
