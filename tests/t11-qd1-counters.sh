#!/usr/bin/env bash
# Description: 4 KiB randread QD1 in baseline and poll-queue modes, with
# per-I/O counters taken from the host VM's KVM (exits, notification exits)
# and the guest's /proc/interrupts.  Checks that the counters see what each
# mode must do: baseline takes a completion interrupt per I/O and a kick per
# I/O; poll-queue still kicks but takes (almost) no completion interrupts.
# timeout: 900
# vm: yes
set -uo pipefail
. "$(dirname "$0")/lib/vm.sh"
run_plan --modes baseline,poll-queue --steps qd1
/usr/bin/python3 "$SQCQ_TOP/tests/lib/summary.py" "$out/run" \
	--expect baseline:randread-qd1-0:ios'>'100 \
	--expect baseline:randread-qd1-0:guest_irqs'>'0.5 \
	--expect baseline:randread-qd1-0:kicks'>'0.5 \
	--expect poll-queue:randread-qd1-0:ios'>'100 \
	--expect poll-queue:randread-qd1-0:kicks'>'0.5 \
	--expect poll-queue:randread-qd1-0:guest_irqs'<'0.1
