#!/usr/bin/env bash
# Description: load: four devices with four request queues each, polled
# at once for 90 s by the userspace vhost driver (tests/vhostdrv), every
# queue writing and reading back 16 blocks at a time, all verified, plus a
# fifth device left idle whose poller must use no CPU (<= 0.05 s in 90 s)
# and stay asleep.  Spin ceiling 1 ms, so that the pollers would spin if
# they could.  Prints the CPU each poller used, per device and per I/O;
# every poller must be gone after teardown.
# timeout: 900
# vm: yes
set -uo pipefail
. "$(dirname "$0")/lib/vm.sh"
build_vhostdrv
# The five targets in one targetcli process (scripts/host/targetcli_batch.py):
# ten 'targetcli' runs took 526 s on the debug host VM with nothing
# written, and its watchdog killed it as hung (2026-12-04) as I/O began.
targets="" mk=""
for i in 10 11 12 13 14; do
	w=naa.50014050000000$i
	targets="$targets $w"
	mk="$mk '/vhost create $w' \"/vhost/$w/tpg1/luns create \$SQCQ_LIO_BACKSTORE\""
done
run_plan --modes none --host-check \
	"/usr/bin/python3 $SQCQ_TOP/scripts/host/targetcli_batch.py$mk && $tool --load 90$targets"
show_host_checks
/usr/bin/python3 "$SQCQ_TOP/tests/lib/summary.py" "$out/run"
