#!/usr/bin/env bash
# Run the project's tests; TAP output, a per-test timeout, and a scan of
# every kernel log the test left for BUG/WARNING/Oops/KASAN/lockdep.
#
# Usage: tests/run.sh [--list] [--unit] [--suite NAME] [--guest-kernel NAME|DIR] [PATTERN...]
#   --unit     only the tests that need no VM (fast)
#   --suite NAME  only the tests of suite NAME (kernel: make kernel-test)
#   --guest-kernel NAME|DIR  the nested guests boot a kernel of make kernel
#              (SQCQ_GUEST_KERNEL; a NAME is built first if it is not)
#   PATTERN    run tests whose file name contains PATTERN
#
# A test is an executable tests/tNN-*.{sh,py}: exit 0 pass, 1 fail, 77 skip.
# Its header may say '# timeout: SEC' (default 600; times SQCQ_TIMEOUT_SCALE,
# e.g. 2 on a debug kernel), '# vm: yes' and '# suite: NAME' (a test of a
# suite runs only with --suite NAME, never in the default run).
# Each test gets SQCQ_TEST_OUT, a directory for its artifacts
# (results/tests/<run>/<test>/, or SQCQ_RUN_DIR/<test>/); kernel logs
# written there are scanned; its TAP line is kept there as 'tap'.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
. "$top/scripts/lib/common.sh"

unit=0 list=0 suite='' pats=()
while [ $# -gt 0 ]; do
	case "$1" in
	--unit) unit=1 ;;
	--list) list=1 ;;
	--suite) [ $# -gt 1 ] || die "--suite needs a name"; suite=$2; shift ;;
	--guest-kernel)
		[ $# -gt 1 ] || die "--guest-kernel needs a configuration name or a directory"
		if [ "${2#*/}" = "$2" ] && [ -f "$top/linux/configs/$2.config" ]; then
			SQCQ_GUEST_KERNEL=$("$top/scripts/build-kernel.sh" --config "$2") ||
				die "--guest-kernel $2: scripts/build-kernel.sh failed above"
			SQCQ_GUEST_KERNEL=$(echo "$SQCQ_GUEST_KERNEL" | tail -1)
		elif [ -d "$2" ]; then
			[ -f "$2/.done" ] || die "--guest-kernel $2: not a kernel built by make kernel"
			SQCQ_GUEST_KERNEL=$(cd "$2" && pwd)
		else
			die "--guest-kernel $2: neither a configuration of linux/configs/ ($(cd "$top/linux/configs" && ls ./*.config | sed 's|^\./||; s/\.config$//' | paste -sd' ')) nor a directory"
		fi
		export SQCQ_GUEST_KERNEL; shift ;;
	-h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) die "unknown option '$1' (try --help)" ;;
	*) pats+=("$1") ;;
	esac
	shift
done

tests=()
for t in "$here"/t[0-9]*-*; do
	[ -x "$t" ] || continue
	n=$(basename "$t")
	if [ $unit = 1 ] && grep -q '^# vm: yes' "$t"; then continue; fi
	[ "$(sed -n 's/^# suite: *//p' "$t" | head -1)" = "$suite" ] || continue
	if [ ${#pats[@]} -gt 0 ]; then
		m=0; for p in "${pats[@]}"; do [[ $n == *"$p"* ]] && m=1; done
		[ $m = 1 ] || continue
	fi
	tests+=("$t")
done
if [ -z "$suite" ] && [ ${#tests[@]} = 0 ] && [ ${#pats[@]} -gt 0 ]; then
	# (a pattern that names only tests of a suite)
	for t in "$here"/t[0-9]*-*; do
		s=$(sed -n 's/^# suite: *//p' "$t" | head -1); n=$(basename "$t")
		for p in "${pats[@]}"; do
			[ -z "$s" ] || [[ $n != *"$p"* ]] || die "$n is in suite '$s': tests/run.sh --suite $s $p (make $s-test)"
		done
	done
fi
if [ -n "$suite" ] && [ ${#tests[@]} = 0 ]; then
	die "no test of suite '$suite'${pats[*]:+ matches ${pats[*]}} (suites: $(sed -n 's/^# suite: *//p' "$here"/t[0-9]*-* | sort -u | paste -sd' '))"
fi
if [ $list = 1 ]; then printf '%s\n' "${tests[@]##*/}"; exit 0; fi

run_dir=${SQCQ_RUN_DIR:-$top/results/tests/$(date +%Y%m%d-%H%M%S)}
# The suite's plans run in the host VM, also on a real KVM host (where the
# automatic role would be the host itself, and the faults would be its
# own): SQCQ_ROLE=local chooses that explicitly.
export SQCQ_ROLE=${SQCQ_ROLE:-vm}
mkdir -p "$run_dir"
# Kernel-log reports fail any test whose logs contain them (tests/lib/scanlog.py).

echo "TAP version 13"
echo "1..${#tests[@]}"
pass=0 fail=0 skip=0 i=0
for t in "${tests[@]}"; do
	i=$((i + 1))
	n=$(basename "$t"); n=${n%.*}
	to=$(sed -n 's/^# timeout: *\([0-9]*\).*/\1/p' "$t" | head -1); to=$(( ${to:-600} * ${SQCQ_TIMEOUT_SCALE:-1} ))
	out=$run_dir/$n; mkdir -p "$out"
	t0=$(date +%s)
	SQCQ_TEST_OUT=$out timeout --kill-after=15 "$to" "$t" >"$out/test.log" 2>&1 </dev/null
	rc=$?
	dt=$(( $(date +%s) - t0 ))
	reason=
	if [ $rc = 124 ] || [ $rc = 137 ]; then
		reason="timed out after ${to}s"; rc=1
	fi
	if [ $rc = 0 ] || [ $rc = 1 ]; then
		# *.boot-crash.log: a VM that died booting on a TCG live-patching
		# race before any project code ran, reported and booted again;
		# run.hung/: a host VM that hung or died with no project code in
		# its log, reported on the test's line and run again.
		# Reports tests/known-reports.toml recognises (upstream code, each
		# with its analysis) are listed as warnings instead.
		scan=$(find "$out" -type f \( -name '*dmesg*' -o -name '*console*' \) ! -name '*boot-crash*' ! -path '*/run.hung/*' -print0 |
			xargs -0 -r /usr/bin/python3 "$here/lib/scanlog.py")
		hits=$(echo "$scan" | sed -n 's/^UNKNOWN //p' | head -5)
		if [ -n "$hits" ]; then
			rc=1; reason="${reason:+$reason; }kernel log: $(echo "$hits" | head -1)"
			# The report itself, where the TAP output shows it (a CI log
			# may be all there is): from a few lines before its first line.
			first=$(echo "$hits" | head -1) f=${first%%:*} l=${first#*:}; l=${l%%:*}
			{
				echo "kernel report, $f line $l:"
				sed -n "$((l > 12 ? l - 12 : 1)),$((l + 24))p" "$f"
			} >>"$out/test.log"
		fi
		echo "$scan" | sed -n 's/^KNOWN /known report (tests\/known-reports.toml): /p' | sort -u >>"$out/warnings"
		# A report whose register dump no x86 CPU can produce (reserved
		# EFLAGS bits set) is the emulator's: a warning.  The harness
		# runs the step the guest died in once more (Guest.rebooted); a
		# step that still failed fails the test on its own.
		echo "$scan" | sed -n "s/^EMULATOR /the emulator's report (impossible CPU state): /p" >>"$out/warnings"
	fi
	case $rc in
	0)
		pass=$((pass + 1))
		# A test that had to run its plan again says so (tests/lib/vm.sh).
		warn=$([ -s "$out/warnings" ] && echo " # warning: $(sort -u "$out/warnings" | paste -sd'|' | sed 's/|/; /g')")
		echo "ok $i - $n (${dt}s)$warn" | tee "$out/tap" ;;
	77) skip=$((skip + 1)); echo "ok $i - $n # SKIP $(tail -1 "$out/test.log")" | tee "$out/tap" ;;
	*)
		fail=$((fail + 1))
		[ -n "$reason" ] || reason=$(grep -m1 -E '^(FAIL|error):' "$out/test.log" || tail -1 "$out/test.log")
		echo "not ok $i - $n (${dt}s) # $reason" | tee "$out/tap"
		sed "s/^/#   /" "$out/test.log" | tail -70
		# Where the plan was (a CI log may be all there is; a timed-out
		# test's own log stops where the host VM was killed): its last
		# steps, what run_plan said and each guest's last command.
		find "$out" \( -name progress.log -o -name run_plan.log -o -name channel.log \) ! -path '*/run.hung/*' |
			sort | while read -r f; do
				[ -s "$f" ] || continue
				echo "${f#"$out"/}, last lines:"
				tail -n 4 "$f" | cut -c1-300 | while read -r ts rest; do
					# progress.log stamps are epoch seconds
					case $ts in
					[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]*) echo "$(date -d "@$ts" +%T) $rest" ;;
					*) echo "$ts $rest" ;;
					esac
				done
			done | sed "s/^/#   /"
		echo "#   full log: $out/test.log"
		;;
	esac
done
echo "# results in $run_dir"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail = 0 ]
