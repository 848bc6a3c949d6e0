# shellcheck shell=bash
# Helpers for tests that run a plan on the host role (VMs).
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/common.sh"
out=${SQCQ_TEST_OUT:?run tests through tests/run.sh}

# run_plan MKPLAN-ARGS...: build a plan and run it; leaves $out/run.
run_plan() {
	/usr/bin/python3 "$SQCQ_TOP/scripts/mkplan.py" -o "$out/plan.json" "$@" ||
		{ echo "FAIL: could not build the plan"; exit 1; }
	"$SQCQ_TOP/scripts/run-plan.sh" --timeout "${PLAN_TIMEOUT:-900}" "$out/plan.json" "$out/run"
	echo "run-plan exited $?"
}
