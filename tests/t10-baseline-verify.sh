#!/usr/bin/env bash
# Description: end to end on the stock notification path: the project's
# vhost_scsi.ko in the host VM, a LIO fileio LUN, the nested guest writes
# with fio verify=crc32c, re-reads and verifies, and catches a corrupted
# block (so the check can fail); rmmod vhost_scsi succeeds afterwards.
# timeout: 900
# vm: yes
set -uo pipefail
. "$(dirname "$0")/lib/vm.sh"
run_plan --modes baseline --steps verify
/usr/bin/python3 "$SQCQ_TOP/tests/lib/summary.py" "$out/run"
