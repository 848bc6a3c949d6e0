#!/bin/bash
# PID 1 of the host VM (L1).  Booted by scripts/vm/host-vm.sh with this
# machine's root filesystem shared read-only over virtiofs; the results
# directory is a second, writable virtiofs share (tag "out").
#
# The plan is OUTDIR/plan.json (host-vm.sh puts it there).  Runs scripts/host/run_plan.py on it, saves dmesg, powers off.
# Never exits: PID 1 exiting panics the kernel (see halt()).
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH LANG=C.UTF-8

# Power off, then wait in bash builtins only: sysrq 'o' shuts devices
# down asynchronously, virtiofs among them, so exec'ing sleep from the
# root share can fail (EIO, exit 126, seen in CI) and PID 1 would return
# and panic the kernel on its way out.  The wait reads a FIFO on tmpfs
# that nothing writes (opened below, once /run is mounted).
halt() {
	sync
	echo o >/proc/sysrq-trigger
	# (without the FIFO read fails at once: a spin until power-off)
	while :; do read -r -t 3600 -u 9 _; done 2>/dev/null
}

mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
top=$(cd "$(dirname "$0")/../.." && pwd)
mount -t tmpfs tmpfs /run
mkfifo /run/halt.fifo && exec 9<>/run/halt.fifo
# Writable scratch space, except where the project itself lives (a checkout
# under /tmp must stay visible).
for d in /tmp /var/tmp /var/lib/dbus /var/lock; do
	case "$top/" in "$d"/*) continue ;; esac
	[ -d "$d" ] && mount -t tmpfs tmpfs "$d"
done
mkdir -p /run/lock /run/dbus /run/sqcq-out /run/tmp
export TMPDIR=/run/tmp HOME=/run/tmp
# A kernel of 'make kernel' (host-vm.sh passes sqcq_kernel=<its dir>): its
# modules replace the read-only share's /lib/modules, which has Debian's.
if [ -n "${sqcq_kernel:-}" ]; then
	rel=$(uname -r)
	if [ ! -d "$sqcq_kernel/lib/modules/$rel" ]; then
		echo "SQCQ-L1: $sqcq_kernel/lib/modules/$rel missing: rebuild with 'make kernel'"
		halt
	fi
	mount -t tmpfs tmpfs /lib/modules
	mkdir "/lib/modules/$rel"
	mount --bind "$sqcq_kernel/lib/modules/$rel" "/lib/modules/$rel"
fi
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
modprobe configfs && mount -t configfs configfs /sys/kernel/config

if ! mount -t virtiofs out /run/sqcq-out; then
	echo "SQCQ-L1: cannot mount the results share (virtiofs tag 'out')"
	halt
fi
out=/run/sqcq-out
plan=$out/plan.json
echo "SQCQ-L1: up after $(cut -d' ' -f1 /proc/uptime)s; plan $plan"

hostname sqcq-l1
# Memory (and page migrations) every 5 s: a host VM that dies without a word (PID 1 killed, an
# OOM panic) leaves its last sample behind (host-vm.sh prints it).
(
	while :; do
		echo "$(cut -d' ' -f1 /proc/uptime)s $(grep -E '^(MemFree|MemAvailable|Cached|Shmem):' /proc/meminfo | tr -s ' \n' ' ')$(grep -E '^(pgmigrate_success|compact_stall|compact_daemon_wake) ' /proc/vmstat | tr -s ' \n' ' ')"
		sleep 5
	done >"$out/l1-meminfo.log" 2>/dev/null
) &
# LIO's command count, written when it moved (every 10 s at most): a
# nested guest's long fio on the debug kernel writes nothing else for
# minutes, and host-vm.sh's watchdog takes files written as progress.
# Commands that complete are progress; a stuck request is not.  Bash
# builtins only (this loop runs for the whole plan).
(
	last=-1
	while :; do
		sum=0
		for f in /sys/kernel/config/target/core/*/*/statistics/scsi_lu/num_cmds; do
			[ -r "$f" ] && read -r n <"$f" && sum=$((sum + n))
		done
		if [ "$sum" != "$last" ]; then
			read -r up _ </proc/uptime
			echo "${up}s $sum commands" >>"$out/l1-io.log"
			last=$sum
		fi
		read -r -t 10 -u 9 _
	done 2>/dev/null
) &
/usr/bin/python3 "$top/scripts/host/run_plan.py" --role vm "$plan" "$out" >"$out/run_plan.log" 2>&1
rc=$?
echo "$rc" >"$out/l1-rc"
dmesg >"$out/l1-dmesg.txt"
echo "SQCQ-L1: run_plan exited $rc"
halt
