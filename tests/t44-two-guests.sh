#!/usr/bin/env bash
# Description: two guests at once.  With the first guest's pollers
# running, a second guest boots on its own vhost target and disk (same
# mode, its own host poller); both write and verify (crc32c) 64 MiB at the
# same time.  The host must run one poller per device while both are up,
# and only the first guest's once the second has shut down; the first
# guest's earlier data must still verify and both kernels' logs stay clean.
# timeout: 900
# vm: yes
set -uo pipefail
. "$(dirname "$0")/lib/vm.sh"
run_plan --modes sqcq-poll --steps write,two-guests,reverify,pollers:1
/usr/bin/python3 "$SQCQ_TOP/tests/lib/summary.py" "$out/run"
