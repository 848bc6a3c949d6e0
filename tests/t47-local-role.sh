#!/usr/bin/env bash
# Description: the harness's local role, as a real KVM host runs it
# (issue 21), exercised inside the host VM before its own plan sets
# anything up (tests/lib/local-role.sh): with someone else's LIO objects
# (a fileio backstore on the loopback fabric) and Debian's vhost_scsi
# loaded but unused, 'scripts/run-plan.sh --role local' loads the
# project's modules, configures LIO, boots baseline and sqcq-poll guests
# that run fio, writes its summary, names the other VM running (the host
# VM's keeper), deletes only its own LIO objects and loads Debian's
# vhost_scsi again; the other objects are as they were.  It refuses,
# touching nothing, when a name of its own is taken, when another
# vhost-scsi target uses vhost_scsi, without /dev/kvm, and on a kernel
# the modules were not built for.  On the old code the run wipes
# someone else's objects (targetcli clearconfig) and replaces a
# vhost_scsi in use.
# timeout: 1800
# vm: yes
set -uo pipefail
. "$(dirname "$0")/lib/vm.sh"
# It runs the local role inside the host VM on Debian's kernel: not on a
# real host's own role, not on the debug kernel's in-tree vhost_scsi.
[ "${SQCQ_ROLE:-vm}" = vm ] || { echo "skip: the local role's test runs in the host VM (SQCQ_ROLE=vm)"; exit 77; }
[ -z "${SQCQ_L1_KERNEL:-}" ] || { echo "skip: the host VM runs the kernel of 'make kernel' (SQCQ_L1_KERNEL)"; exit 77; }
# The host VM's plan holds the inner run (up to 900 s) and the refusals.
export PLAN_TIMEOUT=${PLAN_TIMEOUT:-1500}
/usr/bin/python3 "$SQCQ_TOP/scripts/mkplan.py" -o "$out/local-plan.json" --modes baseline,sqcq-poll \
	--steps rw:randread:1 --runtime 3 || { echo "FAIL: could not build the local role's plan"; exit 1; }
# (the host VM sees this machine's files read-only at the same paths and
# writes to its results share, /run/sqcq-out, which is $out/run here)
run_plan --modes none --host-pre "$SQCQ_TOP/tests/lib/local-role.sh $SQCQ_TOP $out/local-plan.json /run/sqcq-out/local"
show_host_checks
/usr/bin/python3 "$SQCQ_TOP/tests/lib/summary.py" "$out/run"
