#!/usr/bin/env bash
# Boot the host VM (L1) and run a plan in it.
#
# Usage: scripts/vm/host-vm.sh [--timeout SEC] [--mem MB] [--smp N] PLAN.json OUTDIR
#
# L1 is this machine's Debian 6.12 kernel under QEMU TCG with -cpu max (which
# exposes AMD SVM, so L1's KVM can run the nested guest), with this machine's
# root filesystem shared read-only over virtiofs and OUTDIR shared writable.
# Its init (scripts/vm/l1-init.sh) runs scripts/host/run_plan.py.
# Logs: OUTDIR/l1-console.log, OUTDIR/l1-dmesg.txt, OUTDIR/virtiofsd-*.log.
set -euo pipefail
. "$(dirname "$0")/../lib/common.sh"

# Console lines of the kernel's stall reports (RCU stalls, hung tasks, soft
# lockups): the watchdog below does not count them as progress.
stall_report_re='^\[ *[0-9.]+\] (rcu: |INFO: task .* blocked for more than|watchdog: BUG: soft lockup|Sending NMI from CPU)'
timeout_s=1800 mem=4096 smp=${SQCQ_HOST_SMP:-2} stall_s=${SQCQ_STALL_S:-240}
while [ $# -gt 0 ]; do
	case "$1" in
	--timeout) timeout_s=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	-h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) die "unknown option '$1' (try --help)" ;;
	*) break ;;
	esac
done
[ $# -eq 2 ] || die "usage: host-vm.sh [options] PLAN.json OUTDIR"
plan=$(readlink -f "$1"); out=$(readlink -f "$2")
[ -f "$plan" ] || die "plan $plan not found"
# The emulator for the host VM: the project's build of Debian's QEMU with
# the qemu/l0 fixes for nested SVM under TCG (scripts/build-qemu.sh --l0,
# built by 'make qemu'; Debian's own binary loses CPU 0's GIF and NPT
# updates: docs/design.md, "Running on TCG").  SQCQ_L0_QEMU=<binary>
# selects another one: /usr/bin/qemu-system-x86_64 for Debian's, or the
# trace build (scripts/build-qemu.sh --l0-trace --print-path).
if [ -n "${SQCQ_L0_QEMU:-}" ]; then
	l0_qemu=$SQCQ_L0_QEMU
	[ -x "$l0_qemu" ] || die "SQCQ_L0_QEMU=$l0_qemu is not an executable (unset it for the project's build)"
else
	l0_qemu=$("$SQCQ_TOP/scripts/build-qemu.sh" --l0 --print-path) ||
		die "no emulator for the host VM: scripts/build-qemu.sh --l0 failed (see above; 'make qemu' builds it)"
fi
need_cmd "$l0_qemu" timeout
l0_ver=$("$l0_qemu" -version 2>&1 | sed -n 's/^QEMU emulator version //p') || true
[ -n "$l0_ver" ] || die "$l0_qemu -version printed no QEMU version (SQCQ_L0_QEMU selects the emulator)"
l0_ver="$l0_ver, $(command -v "$l0_qemu")"
need_root "booting the host VM (virtiofsd)"
virtiofsd=/usr/lib/qemu/virtiofsd
[ -x "$virtiofsd" ] || die "$virtiofsd missing: install qemu-system-x86 (make deps)"
# SQCQ_L1_KERNEL=<dir of 'make kernel'>: boot that kernel (the series in
# tree, debug options) instead of Debian's; l1-init.sh mounts its modules.
# hung_task_panic=1: a task blocked for the hung-task timeout is a failure
# already (tests/lib/scanlog.py); panicking makes the kernel print its
# stack on the console (console_verbose(); at loglevel=4 the report is
# otherwise a bare "INFO: task ... blocked" line every 2 min until the test
# times out, seen in CI on t41) and ends the run at once.  The timeout
# scales with SQCQ_TIMEOUT_SCALE as the nested guests' does.
hung_s=$(awk -v s="${SQCQ_TIMEOUT_SCALE:-1}" 'BEGIN { printf "%d", 120 * s + 0.5 }')
# tsc=reliable: no clocksource watchdog on the TSC.  Under TCG load it
# found the TSC unstable and switched sched_clock's static key, and that
# live patching met the other CPU in the emulator's int3 race: "Oops:
# int3" in sched_clock_cpu from clocksource_watchdog_work (t44, 2026-12-01
# 07:17; docs/design.md, "Stray int3 after live patching").
kernel=/boot/vmlinuz-$SQCQ_KVER kparams="hung_task_panic=1 sysctl.kernel.hung_task_timeout_secs=$hung_s tsc=reliable"
if [ -n "${SQCQ_L1_KERNEL:-}" ]; then
	[ -f "$SQCQ_L1_KERNEL/vmlinuz" ] && [ -f "$SQCQ_L1_KERNEL/.done" ] ||
		die "SQCQ_L1_KERNEL=$SQCQ_L1_KERNEL is not a kernel built by 'make kernel' (no vmlinuz/.done)"
	# acpi=noirq: under KASAN and TCG the ACPI interpreter is so slow that
	# QEMU's _PRT loop hits its 30 s timeout, twice (virtio uses MSI-X).
	# watchdog_thresh=30 (soft lockups reported after 60 s, not 20 s): KASAN
	# and lockdep under TCG make KVM's entry and exit paths about ten times
	# slower; a nested guest's QEMU was reported stuck for 28 s.
	# no5lvl: with 5-level paging (-cpu max has LA57) KASAN reported a
	# wild-memory-access in rcu_is_watching() from an interrupt during
	# cpu_detect() at 9 s, before any module (reliability-20261130-074146
	# t43; the same in a nested guest on this kernel); it also turns
	# lockdep off.
	# loglevel=5: warnings reach the console too; a host VM that dies
	# takes its dmesg with it (t44 at 17:58 oopsed in the scheduler
	# "Tainted: W" from a warning the console did not show).
	kernel=$SQCQ_L1_KERNEL/vmlinuz kparams="$kparams sqcq_kernel=$SQCQ_L1_KERNEL acpi=noirq watchdog_thresh=30 no5lvl loglevel=5"
	# KASAN and lockdep make it slower; kmemleak scans take minutes.
	stall_s=$((stall_s * 2))
fi
# SQCQ_L1_CMDLINE: more kernel parameters for the host VM (experiments).
kparams="$kparams ${SQCQ_L1_CMDLINE:-}"
[ -r "$kernel" ] || die "$kernel missing: install linux-image-$SQCQ_KVER (make deps)"
mkdir -p "$out"
rm -f "$out/l1-rc" "$out/l1-hung" "$out/l1-died"
[ "$plan" = "$out/plan.json" ] || cp "$plan" "$out/plan.json"

run=$(mktemp -d -t sqcq-l1.XXXXXX)
pids=() l0_pid=''
# The emulator runs under its own 'timeout', in a process group of its
# own: a signal to ours (tests/run.sh's timeout) does not reach it, so end
# it here or it runs on after us (t15).  'timeout' passes the TERM on.
cleanup() {
	local p
	[ -z "$l0_pid" ] || kill "$l0_pid" 2>/dev/null || true
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$run"
}
trap cleanup EXIT

boot() {
	# virtiofsd exits when its VM disconnects: one pair per boot.
	rm -f "$run"/*.sock
	"$virtiofsd" --socket-path="$run/root.sock" -o source=/ -o cache=always \
		-o sandbox=chroot >"$out/virtiofsd-root.log" 2>&1 &
	pids+=($!)
	"$virtiofsd" --socket-path="$run/out.sock" -o source="$out" -o cache=none \
		-o sandbox=chroot >"$out/virtiofsd-out.log" 2>&1 &
	pids+=($!)
	for s in root out; do
		for _ in $(seq 50); do [ -S "$run/$s.sock" ] && break; sleep 0.1; done
		[ -S "$run/$s.sock" ] || die "virtiofsd for '$s' did not start (log: $out/virtiofsd-$s.log)"
	done
	echo "$l0_ver" >"$out/l0-qemu.txt"
	log "host VM: booting $(basename "$(dirname "$kernel")")/$(basename "$kernel") on QEMU $l0_ver (timeout ${timeout_s}s; console: $out/l1-console.log)"
	t0=$(date +%s)
	set +e
	touch "$run/stamp"
	timeout --kill-after=10 "$timeout_s" "$l0_qemu" \
		-accel tcg -cpu max -smp "$smp" -m "${mem}M" \
		-object memory-backend-memfd,id=mem,size="${mem}M",share=on -numa node,memdev=mem \
		-chardev socket,id=root,path="$run/root.sock" \
		-device vhost-user-fs-pci,chardev=root,tag=rootfs \
		-chardev socket,id=out,path="$run/out.sock" \
		-device vhost-user-fs-pci,chardev=out,tag=out \
		-nodefaults -display none -serial stdio -no-reboot \
		-monitor unix:"$run/mon.sock",server=on,wait=off \
		-kernel "$kernel" \
		-append "rootfstype=virtiofs root=rootfs ro console=ttyS0 loglevel=4 panic=-1 nokaslr init=$SQCQ_TOP/scripts/vm/l1-init.sh $kparams" \
		</dev/null >"$out/l1-console.log" 2>&1 &
	local qpid=$! idle=0 lines=0 n
	l0_pid=$qpid
	# Watchdog: the host VM writes its console and the results share as it
	# goes (progress.log at every step, l1-io.log whenever LIO completed
	# commands: a nested guest's long fio on the debug kernel, two
	# guests at once in t44, ran over 8 min without a step).  Nothing written for
	# $stall_s seconds means it hangs (seen: both vCPUs idle for good under
	# TCG): record where its CPUs are, then end it, loudly, instead of at
	# the timeout.  Not progress: the memory samples (a live kernel writes
	# them while its plan is stuck) and the kernel's own stall reports on
	# the console, which repeat for as long as the stall lasts (debug host
	# VM, 2026-12-01 03:13: a vCPU stuck in the nested guest with the
	# timer interrupt pending, and an RCU stall report every 78 s kept the
	# watchdog quiet until the plan's timeout).
	# (QEMU's exit is seen within a second, the watchdog looks every 10 s:
	# a plain 'sleep 10' kept every run up to 10 s after its host VM ended)
	local tick=0
	while kill -0 "$qpid" 2>/dev/null; do
		sleep 1
		tick=$((tick + 1))
		[ $((tick % 10)) = 0 ] || continue
		n=$(grep -cvE "$stall_report_re" "$out/l1-console.log" 2>/dev/null)
		if [ "${n:-0}" != "$lines" ] ||
			[ -n "$(find "$out" -newer "$run/stamp" -type f ! -name l1-meminfo.log ! -name l1-console.log -print -quit)" ]; then
			touch "$run/stamp"; idle=0 lines=${n:-0}
		else
			idle=$((idle + 10))
		fi
		if [ "$idle" -ge "$stall_s" ]; then
			echo "error: the host VM wrote nothing for ${stall_s}s: it hangs; killing it (last progress: $(tail -1 "$out/progress.log" 2>/dev/null | cut -d' ' -f2-))" >&2
			echo "host VM hung: no output for ${stall_s}s" >"$out/l1-hung"
			# Where the vCPUs are, then an NMI a live kernel answers
			# on the console.
			"$SQCQ_TOP/scripts/vm/hang-dump.py" "$run/mon.sock" \
				"$out/host-kallsyms.gz" "$out/l1-hang-dump.txt" || true
			# And where QEMU and virtiofsd are: a main loop blocked
			# in vhost-user (the monitor then times out too) looks
			# the same from inside.
			for p in "$qpid" $(pgrep -P "$qpid") "${pids[@]}"; do
				for t in /proc/"$p"/task/*; do
					echo "$p/${t##*/} $(cut -d' ' -f2,3 "$t/stat" 2>/dev/null) wchan=$(cat "$t/wchan" 2>/dev/null)"
				done
			done >"$out/l0-threads.txt" 2>&1
			if command -v gdb >/dev/null; then
				for p in $(pgrep -P "$qpid") "${pids[@]}"; do
					timeout 60 gdb -p "$p" -batch -ex 'thread apply all bt' 2>&1
				done >"$out/l0-backtraces.txt"
			fi
			sleep 20
			echo "error: registers and symbols: $out/l1-hang-dump.txt" >&2
			pkill -KILL -P "$qpid" 2>/dev/null; kill -KILL "$qpid" 2>/dev/null
			break
		fi
	done
	wait "$qpid"
	qrc=$?
	set -e
	log "host VM: exited after $(( $(date +%s) - t0 ))s"
}
boot
# Under TCG, a CPU can execute a stale copy of kernel text that another CPU
# is live-patching (static keys) and oops on a leftover int3.  If that kills
# the host VM before any project module is in its kernel (while booting, or
# while the plan loads kvm_amd: the oops's module list has no vhost_scsi),
# nothing of ours ran in it: say so and boot once more.  Any other
# failure, or the same one later, ends the run.
first_oops_mods() {
	sed -n '/Oops: int3/,$p' "$out/l1-console.log" | grep -m1 'Modules linked in:'
}
if [ ! -f "$out/l1-rc" ] && grep -q 'Oops: int3' "$out/l1-console.log" &&
	{ ! grep -q '^SQCQ-L1: up' "$out/l1-console.log" || ! first_oops_mods | grep -q vhost_scsi; }; then
	mv "$out/l1-console.log" "$out/l1-console.boot-crash.log"
	echo "warning: the host VM oopsed on a stray int3 before any project module was loaded (TCG live-patching race; log: $out/l1-console.boot-crash.log); booting it again, once" >&2
	echo "host VM boot crash (int3) retried once" >>"$out/l1-boot-retries"
	boot
fi
# Why the host VM ended early, in a few lines a CI log shows: the panic
# reason, the first kernel report, what the plan was doing, the host VM's
# memory at the last sample and what virtiofsd said.
crash_summary() {
	local c=$out/l1-console.log
	echo "--- host VM end, console $c:"
	grep -m1 -E 'Kernel panic' "$c" || echo "(no kernel panic line)"
	grep -m1 -B1 -A4 -E 'BUG:|Oops|WARNING:|invoked oom-killer|Out of memory|segfault|general protection' "$c" || true
	# A hung task (hung_task_panic=1): the task and where it waits.
	sed -n '/blocked for more than/,/^\[ *[0-9.]*\] *<\/TASK>/p' "$c" | head -n 40
	echo "--- last console lines:"; tail -n 4 "$c"
	echo "--- last plan progress: $(tail -1 "$out/progress.log" 2>/dev/null || echo none)"
	echo "--- run_plan.log tail:"; tail -n 3 "$out/run_plan.log" 2>/dev/null || echo "(none)"
	echo "--- host VM memory, last sample (kB): $(tail -1 "$out/l1-meminfo.log" 2>/dev/null || echo none)"
	tail -n 3 "$out"/virtiofsd-*.log 2>/dev/null || true
}
[ -f "$out/l1-hung" ] && die "host VM hung (no output for ${stall_s}s; console: $out/l1-console.log, last progress: $(tail -1 "$out/progress.log" 2>/dev/null | cut -d' ' -f2-))"
[ $qrc -eq 124 ] || [ $qrc -eq 137 ] &&
	die "host VM did not finish within ${timeout_s}s; killed (console: $out/l1-console.log, last: $(tail -c 300 "$out/l1-console.log" | tr '\n' ' '))"
if [ ! -f "$out/l1-rc" ]; then
	crash_summary >&2
	# Seen once in CI: PID 1 gone mid-plan ("Attempted to kill init") with
	# no kernel report before it.  When nothing after boot names project
	# code (modules lists aside), say so in l1-died: callers may run the
	# plan once more, loudly, as for a hang.
	if ! sed -n '/^SQCQ-L1: up/,$p' "$out/l1-console.log" | grep -v -e 'Modules linked in:' -e '^SQCQ-L1:' |
		grep -qE 'vhost|sqcq|virtscsi|virtio_scsi|target_core|tcm_|iblock|fd_do_rw'; then
		echo "host VM died mid-plan: $(grep -m1 -E 'Kernel panic' "$out/l1-console.log" || echo 'no panic line') (no project code in its kernel log)" >"$out/l1-died"
	fi
	die "host VM ended (qemu exit $qrc) without running the plan to its end (console: $out/l1-console.log; summary above)"
fi
exit "$(cat "$out/l1-rc")"
