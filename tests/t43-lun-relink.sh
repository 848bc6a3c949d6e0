#!/usr/bin/env bash
# Description: the LUN is unlinked from the vhost TPG with I/O in flight
# and linked again 3 s later, both pollers running.  The guest's fio may
# fail while the LUN is gone (seen: commands fail with sense Data
# Protect) but must end; the disk must be there after the relink
# (rescanned if it went away) and verified I/O on it pass, the host
# poller still there.  A second guest then re-verifies the data written
# before the fault; rmmod vhost_scsi must succeed at the end and both
# kernels' logs stay clean.
# Both pollers spin while I/O flows (spin_policy, tests/lib/vm.sh), so the
# faults hit the polling path; the first write must show them working.
# It runs from a copy of the tree under /tmp (use_tmp_checkout), where
# the host VM's /tmp is read-only: every host step must write to the
# role's scratch directory ($TMPDIR), the relink's among them (issue 16).
# timeout: 900
# vm: yes
set -uo pipefail
. "$(dirname "$0")/lib/vm.sh"
use_tmp_checkout
run_plan --modes sqcq-poll --host-params "$spin_policy" --guest-params "$spin_policy" --steps write,lun-relink --then reverify,pollers:1
/usr/bin/python3 "$SQCQ_TOP/tests/lib/summary.py" "$out/run" \
	--expect sqcq-poll:verify-write:poller.vq_work'>'100 \
	--expect sqcq-poll:verify-write:guest_poller.wakeups'>'10
