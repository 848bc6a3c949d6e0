#!/usr/bin/env bash
# Description: two guests at once.  With the first guest's pollers
# running, a second guest boots on its own vhost target and disk (same
# mode, its own host poller); both write and verify (crc32c) 64 MiB at the
# same time (half of SQCQ_VERIFY_MB: 8 MiB under make reliability).  The host must run one poller per device while both are up,
# and only the first guest's once the second has shut down; the first
# guest's earlier data must still verify and both kernels' logs stay clean.
# Both pollers spin while I/O flows (spin_policy, tests/lib/vm.sh), so the
# guests' I/O goes through polling; the first write must show it.
# timeout: 900
# vm: yes
set -uo pipefail
. "$(dirname "$0")/lib/vm.sh"
run_plan --modes sqcq-poll --host-params "$spin_policy" --guest-params "$spin_policy" --steps write,two-guests,reverify,pollers:1
/usr/bin/python3 "$SQCQ_TOP/tests/lib/summary.py" "$out/run" \
	--expect sqcq-poll:verify-write:poller.vq_work'>'100 \
	--expect sqcq-poll:verify-write:guest_poller.wakeups'>'10
