#!/usr/bin/env bash
# Description: the LUN is unlinked from the vhost TPG with I/O in flight
# and linked again 3 s later, both pollers running.  The guest's fio may
# fail while the LUN is gone (seen: commands fail with sense Data
# Protect) but must end; the disk must be there after the relink
# (rescanned if it went away) and verified I/O on it pass, the host
# poller still there.  A second guest then re-verifies the data written
# before the fault; rmmod vhost_scsi must succeed at the end and both
# kernels' logs stay clean.
# timeout: 900
# vm: yes
set -uo pipefail
. "$(dirname "$0")/lib/vm.sh"
run_plan --modes sqcq-poll --steps write,lun-relink --then reverify,pollers:1
/usr/bin/python3 "$SQCQ_TOP/tests/lib/summary.py" "$out/run"
