#!/usr/bin/env bash
# In the host VM, as a host check of t47 before the host VM's own plan
# sets anything up: the harness's local role (scripts/run-plan.sh --role
# local), run as a real KVM host runs it, beside LIO objects and a
# vhost_scsi that are not the harness's.
#
# Usage: local-role.sh TOP PLAN.json RESULTS_DIR
#
# Prints one "ok -" line per check; the first failure prints "FAIL: why"
# and exits 1.  Everything it makes is removed again before it exits, so
# the host VM's plan finds LIO as it was.
set -uo pipefail
top=$1 plan=$2 res=$3
cfg=/sys/kernel/config/target
other_lun=naa.5001405999999990 other_vhost=naa.5001405999999991
mkdir -p "$res"

fail() { echo "FAIL: $*"; exit 1; }
tc() { targetcli "$@" >>"$res/targetcli.log" 2>&1 || fail "targetcli $* (log: $res/targetcli.log)"; }
# LIO as configfs shows it: every fabric's targets, every backstore.
snapshot() { ls -d "$cfg"/*/naa.* "$cfg"/*/iqn.* "$cfg"/core/*_[0-9]*/*/ 2>/dev/null | sort; }
same_lio() {
	[ "$(snapshot)" = "$before" ] ||
		fail "$1: LIO is not as it was: $(diff <(echo "$before") <(snapshot) | grep '^[<>]' | tr '\n' ' ')"
}
# The nested guests get the host VM's CPU model and locked RAM
# (hostrole.emulated): under TCG '-cpu host' breaks them; not a real host's concern.
export SQCQ_IN_HOST_VM=1
run_local() {	# NAME [WRAPPER...]: the local role into $res/NAME; its exit code
	local name=$1
	shift
	"$@" "$top/scripts/run-plan.sh" --role local --timeout 900 "$plan" "$res/$name" >"$res/$name.log" 2>&1
}
# Why a run was refused: its summary's host error, or its log's last line.
refusal() {
	/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["host"].get("error", ""))' \
		"$res/$1/summary.json" 2>/dev/null || tail -1 "$res/$1.log"
}

# A real host runs a system D-Bus (targetcli's backstores look for TCMU
# handlers on it); the host VM's plan starts one only later, in its setup.
mkdir -p /run/dbus
[ -S /run/dbus/system_bus_socket ] || dbus-daemon --system --fork --nopidfile ||
	fail "cannot start a system D-Bus"

# Someone else's: a fileio backstore exported through the loopback
# fabric, and Debian's vhost_scsi loaded but unused.
modprobe -a tcm_loop target_core_file || fail "cannot load tcm_loop"
truncate -s 16M "$TMPDIR/other.img"
tc /backstores/fileio create name=other_disk file_or_dev="$TMPDIR/other.img" size=16M
tc /loopback create $other_lun
tc /loopback/$other_lun/luns create /backstores/fileio/other_disk
modprobe vhost_scsi || fail "cannot load Debian's vhost_scsi"
[ ! -e /sys/module/vhost_scsi/parameters/sqcq_enable ] || fail "the vhost_scsi loaded is not Debian's"
before=$(snapshot)
echo "ok - set up someone else's LIO objects: $(echo "$before" | sed "s|$cfg/||" | tr '\n' ' ')"

# 1. The run: modules, LIO, the guests, fio, the summary, the cleanup.
run_local run
rc=$?
[ $rc = 0 ] || { tail -20 "$res/run.log"; fail "the local role exited $rc: $(refusal run)"; }
/usr/bin/python3 - "$res/run/summary.json" <<'PY' || exit 1
import json, sys
s = json.load(open(sys.argv[1]))
bad = [f"{x['guest']}:{x['step']}: {x.get('error', '?')}" for x in s["steps"] if not x["ok"]]
if s.get("role") != "local" or "error" in s["host"] or bad:
    sys.exit(f"FAIL: the local run: role {s.get('role')}, host error {s['host'].get('error')}, failed {bad}")
fio = [x for x in s["steps"] if "iops" in x]
modes = sorted({x["guest"] for x in fio})
steps = {x["step"]: x for x in s["steps"]}
for need in ("lio-cleanup", "rmmod-vhost_scsi", "vhost_scsi-restored"):
    if need not in steps:
        sys.exit(f"FAIL: the local run has no {need} step")
if len(fio) < 2 or any(not x["iops"] for x in fio):
    sys.exit(f"FAIL: expected fio results of 2 guests, got {[(x['guest'], x.get('iops')) for x in fio]}")
vms = s["host"].get("other_vms")
if not vms:
    sys.exit("FAIL: the host VM's keeper VM ran beside the local role, but summary host.other_vms is empty")
print("ok - local role: %s; %s; %s; other VMs named: %s" % (
    ", ".join("%s %.0f IOPS" % (x["guest"], x["iops"]) for x in fio), steps["lio-cleanup"]["output"],
    steps["vhost_scsi-restored"]["output"], ", ".join("%d %s" % (v["pid"], v["comm"]) for v in vms)))
PY
same_lio "after the run"
[ -d /sys/module/vhost_scsi ] && [ ! -e /sys/module/vhost_scsi/parameters/sqcq_enable ] ||
	fail "Debian's vhost_scsi was loaded before the run and is not after it"
echo "ok - after the run: someone else's LIO objects as they were, Debian's vhost_scsi loaded again"

# 2. Refusals, each leaving everything as it was.
expect_refusal() {	# NAME PATTERN WHAT
	local why
	[ -e "$res/$1/summary.json" ] && grep -q '"step": "boot"' "$res/$1/summary.json" &&
		fail "$3: a guest booted"
	why=$(refusal "$1")
	case $why in *"$2"*) ;; *) fail "$3: refused without saying '$2': $why (log: $res/$1.log)" ;; esac
	echo "ok - $3: refused: ${why:0:200}"
}
tc /backstores/fileio create name=sqcq_disk0 file_or_dev="$TMPDIR/taken.img" size=16M
before=$(snapshot)
run_local taken && fail "the local role ran although sqcq_disk0 was someone else's"
expect_refusal taken "LIO already has objects under the names this harness creates" "a name of the harness's taken"
same_lio "after the refusal (name taken)"
tc /backstores/fileio delete sqcq_disk0

tc /vhost create $other_vhost
tc /vhost/$other_vhost/tpg1/luns create /backstores/fileio/other_disk
before=$(snapshot)
run_local inuse && fail "the local role ran although another vhost-scsi target uses vhost_scsi"
expect_refusal inuse "vhost_scsi is loaded and in use here" "vhost_scsi in use by someone else's target"
same_lio "after the refusal (vhost_scsi in use)"
[ ! -e /sys/module/vhost_scsi/parameters/sqcq_enable ] || fail "vhost_scsi was replaced although in use"
tc /vhost delete $other_vhost
before=$(snapshot)

touch "$TMPDIR/not-kvm"
run_local nokvm unshare -m sh -c 'mount --bind "$0" /dev/kvm && exec "$@"' "$TMPDIR/not-kvm" &&
	fail "the local role ran without /dev/kvm"
expect_refusal nokvm "/dev/kvm missing or not a device" "no /dev/kvm"
run_local kernel setarch x86_64 --uname-2.6 && fail "the local role ran on a kernel the modules were not built for"
expect_refusal kernel "was built for kernel $(uname -r), but this host runs 2.6." "a kernel not the modules'"
same_lio "after the refusals (/dev/kvm, kernel)"

# Leave the host VM as its plan found it.
tc /loopback delete $other_lun
tc /backstores/fileio delete other_disk
# (the vhost fabric's configfs directory outlives its last target and pins the module)
rmdir "$cfg/vhost" 2>/dev/null
rmmod vhost_scsi || fail "cannot unload Debian's vhost_scsi again"
echo "ok - someone else's objects removed again; the host VM's plan goes on"
