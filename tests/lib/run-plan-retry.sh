#!/usr/bin/env bash
# Usage: tests/lib/run-plan-retry.sh PLAN.json RUNDIR WARNINGS
#
# Run a plan on the host role into RUNDIR.  Under TCG the host VM can hang
# with both CPUs idle and interrupts enabled while nothing is delivered
# (docs/design.md, "Running on TCG"): its watchdog leaves a post-mortem and
# RUNDIR/l1-hung.  Or it can die mid-plan with no project code in its
# kernel log (RUNDIR/l1-died, scripts/vm/host-vm.sh).  Either way that run
# is kept as RUNDIR.hung, a line goes to WARNINGS (tests/run.sh prints it
# on the test's line) and the plan runs once more.  Any other failure, or
# a second one, stands.  Exits with run-plan.sh's status.
set -u
[ $# -eq 3 ] || { echo "usage: $0 PLAN.json RUNDIR WARNINGS" >&2; exit 2; }
plan=$1 run=$2 warnings=$3
top=$(cd "$(dirname "$0")/../.." && pwd)
# A host VM that oopsed on a stray int3 while booting was booted again by
# scripts/vm/host-vm.sh (RUNDIR/l1-boot-retries): that goes on the TAP line too.
boot_retries() {
	[ -f "$1/l1-boot-retries" ] &&
		echo "$(head -1 "$1/l1-boot-retries") (console: $1/l1-console.boot-crash.log)" >>"$warnings"
	return 0
}
"$top/scripts/run-plan.sh" --timeout "${PLAN_TIMEOUT:-900}" "$plan" "$run"
rc=$?
why=
if [ $rc != 0 ] && [ ! -e "$run.hung" ]; then
	if [ -f "$run/l1-hung" ]; then
		why="host VM hung (emulator; post-mortem: $run.hung/l1-hang-dump.txt)"
	elif [ -f "$run/l1-died" ]; then
		why="$(cat "$run/l1-died") (console: $run.hung/l1-console.log)"
	fi
fi
if [ -z "$why" ]; then
	boot_retries "$run"
	exit $rc
fi
mv "$run" "$run.hung"
boot_retries "$run.hung"
echo "$why; the plan ran once more" | tee -a "$warnings"
"$top/scripts/run-plan.sh" --timeout "${PLAN_TIMEOUT:-900}" "$plan" "$run"
rc=$?
boot_retries "$run"
exit $rc
