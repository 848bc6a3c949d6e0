#!/usr/bin/env bash
# Run a plan on the host role: in the host VM here, on the machine itself on
# a real KVM host.
#
# Usage: scripts/run-plan.sh [--role auto|vm|local] [--timeout SEC] PLAN.json OUTDIR
#
# auto (default) picks 'local' when this machine runs the kernel the modules
# were built for (SQCQ_KVER or KDIR's) and has a working /dev/kvm, else 'vm'.
set -euo pipefail
. "$(dirname "$0")/lib/common.sh"

role=${SQCQ_ROLE:-auto} timeout_s=1800
while [ $# -gt 0 ]; do
	case "$1" in
	--role) role=$2; shift 2 ;;
	--timeout) timeout_s=$2; shift 2 ;;
	-h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) die "unknown option '$1' (try --help)" ;;
	*) break ;;
	esac
done
[ $# -eq 2 ] || die "usage: run-plan.sh [--role auto|vm|local] PLAN.json OUTDIR"
if [ "$role" = auto ]; then
	ko=$SQCQ_BUILD/kmod/drivers/vhost/vhost_scsi.ko
	built_for=$(modinfo -F vermagic "$ko" 2>/dev/null | cut -d' ' -f1)
	if [ -n "$built_for" ] && [ "$built_for" = "$(uname -r)" ] && [ -c /dev/kvm ] && [ -d /sys/module/kvm ]; then
		role=local
	else
		role=vm
	fi
fi
case "$role" in
vm) exec "$SQCQ_TOP/scripts/vm/host-vm.sh" --timeout "$timeout_s" "$1" "$2" ;;
local)
	need_root "the local host role (loads modules, configures LIO)"
	mkdir -p "$2"
	# (SIGTERM at the timeout: the host role removes what it made, which
	# takes a few targetcli calls, before SIGKILL)
	exec timeout --kill-after=180 "$timeout_s" /usr/bin/python3 "$SQCQ_TOP/scripts/host/run_plan.py" --role local "$1" "$2" ;;
*) die "unknown role '$role' (auto, vm, local)" ;;
esac
