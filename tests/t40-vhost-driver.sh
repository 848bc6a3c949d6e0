#!/usr/bin/env bash
# Description: the SQ poller's protocol and a hostile guest, checked by a
# userspace virtio-scsi driver (tests/vhostdrv/vhostdrv.c) that plays the
# guest directly on /dev/vhost-scsi in the host VM, against a real LIO
# target: no kick needed while the poller is awake, NEED_WAKEUP visible
# once it sleeps, an unkicked request waits, a kick wakes it, data written
# and read back; 50 feature toggles under I/O; 50 endpoint clears with
# writes in flight (none stranded); completions never consumed;
# then an avail index a ring ahead, a descriptor loop, a descriptor
# outside guest memory and an absurd indirect table: each must leave the
# poller asleep and idle (no spinning past its budget), a second device
# working, and a clean teardown.  Then the stop paths (issue 18): a kick
# followed at once by SET_FEATURES without the bit, 100 times, with no
# second kick (every request completes); the vq moved between two workers
# 20 times while its poll spins (every request after each move completes),
# then a move with the endpoint cleared at once (no poller left, the
# device works again); sqcq_enable=0 while a device runs
# (it keeps accepting the bit it offered); bad-target replies mixed with
# completions under EVENT_IDX, taken by interrupt only (none lost); a
# CLEAR_ENDPOINT that fails (the device polls on), and a release with the
# poll running (no thread left, the target usable again).  And the policy's
# clock (issue 20): a gap across a sleep ends at the kick, not at the
# service after the wakeup (the worker's CPU held 30 ms by a SCHED_FIFO
# thread at each kick: the gap EMA stays at the driver's few ms; it was
# 40 ms when the wakeup counted).  Both targets share one backstore.
# timeout: 900
# vm: yes
set -uo pipefail
. "$(dirname "$0")/lib/vm.sh"
build_vhostdrv
w1=naa.5001405000000001 w2=naa.5001405000000003
run_plan --modes none --host-check "targetcli /vhost create $w2 && targetcli /vhost/$w2/tpg1/luns create \$SQCQ_LIO_BACKSTORE && $tool $w1 $w2"
show_host_checks
/usr/bin/python3 "$SQCQ_TOP/tests/lib/summary.py" "$out/run"
