#!/usr/bin/env bash
# Description: a host VM never outlives the harness that booted it.
# scripts/vm/host-vm.sh runs the emulator under its own 'timeout', which
# puts it in a process group of its own, out of reach of the test
# runner's timeout (tests/run.sh signals the test's group).  On
# 2026-12-04 t46 timed out on the debug kernel and its host VM ran on for
# 15 min beside the next run, on both CPUs.  Here a stand-in emulator
# (SQCQ_L0_QEMU: answers -version, then sleeps) is booted by host-vm.sh,
# which is then sent SIGTERM as a timeout would: the stand-in must be gone
# within 15 s.  No VM; needs root (virtiofsd) as host-vm.sh does.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" = 0 ] || { echo "# SKIP: needs root (host-vm.sh starts virtiofsd)"; exit 77; }
work=$(mktemp -d)
trap 'pkill -f "$work/fake-qemu" 2>/dev/null; rm -rf "$work"' EXIT
cat >"$work/fake-qemu" <<'FAKE'
#!/bin/sh
case "$1" in -version) echo "QEMU emulator version 7.2.0 (stand-in)"; exit 0 ;; esac
echo "stand-in emulator up" >&2
exec sleep 600
FAKE
chmod +x "$work/fake-qemu"
echo '{"steps": []}' >"$work/plan.json"
SQCQ_L0_QEMU=$work/fake-qemu "$top/scripts/vm/host-vm.sh" --timeout 300 \
	"$work/plan.json" "$work/out" >"$work/host-vm.log" 2>&1 &
hv=$!
for _ in $(seq 100); do pgrep -f "$work/fake-qemu" >/dev/null && break; sleep 0.2; done
if ! pgrep -f "$work/fake-qemu" >/dev/null; then
	echo "FAIL: host-vm.sh did not start the stand-in emulator in 20 s:"
	sed 's/^/  /' "$work/host-vm.log"
	exit 1
fi
kill -TERM "$hv"
for _ in $(seq 75); do pgrep -f "$work/fake-qemu" >/dev/null || break; sleep 0.2; done
if pgrep -f "$work/fake-qemu" >/dev/null; then
	echo "FAIL: host-vm.sh got SIGTERM; its emulator still runs 15 s later:"
	pgrep -af "$work/fake-qemu" | sed 's/^/  /'
	pkill -f "$work/fake-qemu"
	wait "$hv" 2>/dev/null
	exit 1
fi
wait "$hv" 2>/dev/null
echo "ok: SIGTERM to host-vm.sh ended its emulator too"
