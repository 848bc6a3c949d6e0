#!/usr/bin/env bash
# Description: the nested guest on the guest kernel of 'make kernel'
# (KERNEL=guest: kvm_guest.config, virtio_scsi and the CQ poller built
# in), so the built-in path is proven: no module is loaded in the guest,
# the harness puts the guest's parameters on its kernel command line and
# they are the ones in effect (a probe-time one, virtscsi_poll_queues,
# included), VIRTIO_F_SQCQ_POLL is negotiated exactly where QEMU offers
# it, fio verify=crc32c passes and catches a corrupted block, baseline
# takes its completions by interrupt, poll-queue by polling, and with
# both pollers on the guest's CQ poller reaps the completions.
# Its own suite (make kernel-test): the guest kernel takes 15-20 min to
# build the first time.
# timeout: 1500
# vm: yes
# suite: kernel
set -uo pipefail
. "$(dirname "$0")/lib/vm.sh"
if [ -z "${SQCQ_GUEST_KERNEL:-}" ]; then
	SQCQ_GUEST_KERNEL=$("$SQCQ_TOP/scripts/build-kernel.sh" --config guest --print) ||
		{ echo "FAIL: the guest kernel is not built: make kernel-test builds it first"; exit 1; }
fi
export SQCQ_GUEST_KERNEL
rel=$(cat "$SQCQ_GUEST_KERNEL/release")
grep -qxF kernel/drivers/scsi/virtio_scsi.ko "$SQCQ_GUEST_KERNEL/lib/modules/$rel/modules.builtin" ||
	{ echo "FAIL: $SQCQ_GUEST_KERNEL ($rel) does not have virtio_scsi built in"; exit 1; }
echo "guest kernel: $rel ($SQCQ_GUEST_KERNEL)"
run_plan --modes baseline,poll-queue,sqcq-poll --runtime 5 \
	--guest-params "sqcq_spin_max_us=1000000 debugfs:idle_timeout_us=5000" \
	--host-params "sqcq_spin_max_us=1000000 debugfs:idle_timeout_us=200" \
	--steps builtin,verify,qd1,rw:randread:32
# What the harness gave each guest: this kernel, and the parameters on
# its command line (the builtin step checks them from inside).
bad=0
for want in baseline:virtio_sqcq.sqcq_spin_max_us=1000000 poll-queue:virtio_scsi.virtscsi_poll_queues=1 \
	sqcq-poll:virtio_sqcq.sqcq_spin_max_us=1000000; do
	g=${want%%:*} c=$out/run/${want%%:*}/qemu-cmdline.txt
	grep -qF -- "$SQCQ_GUEST_KERNEL/vmlinuz" "$c" 2>/dev/null ||
		{ echo "FAIL: guest $g did not boot $SQCQ_GUEST_KERNEL/vmlinuz ($c)"; bad=1; }
	grep -qF -- "${want#*:}" "$c" 2>/dev/null ||
		{ echo "FAIL: guest $g's command line lacks ${want#*:} ($c)"; bad=1; }
done
/usr/bin/python3 "$SQCQ_TOP/tests/lib/summary.py" "$out/run" \
	--expect baseline:randread-qd1-5:guest_irqs'>'0.5 \
	--expect poll-queue:randread-qd1-5:guest_irqs'<'0.1 \
	--expect sqcq-poll:randread-qd32-6:guest_poller.reaped_per_io'>'0.1 || bad=1
exit $bad
