#!/usr/bin/env bash
# Description: the combined mode (poll-sqcq: io_uring --hipri on virtio-scsi
# poll queues, host SQ poller, CQ poller on the interrupt queues) with the
# default policy: fio verify=crc32c passes, fio reaps its own poll queue
# (no guest request interrupts), both pollers exist and cost nothing when
# the guest idles.
# timeout: 900
# vm: yes
set -uo pipefail
. "$(dirname "$0")/lib/vm.sh"
run_plan --modes poll-sqcq --steps verify,pollers:1,rw:randread:32,idle:1
python3=/usr/bin/python3
$python3 "$SQCQ_TOP/tests/lib/summary.py" "$out/run" \
	--expect poll-sqcq:randread-qd32-5:ios'>'1000 \
	--expect poll-sqcq:randread-qd32-5:guest_irqs'<'0.05 \
	--expect poll-sqcq:randread-qd32-5:guest_poller.pollers'>'0.5
