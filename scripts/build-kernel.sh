#!/usr/bin/env bash
# Build a whole Linux 6.12 kernel with the project's series in tree
# (make kernel).
#
# Usage: scripts/build-kernel.sh [--config NAME] [--print|--settings]
#   --config NAME   configuration linux/configs/NAME.config (default debug):
#                     host    a KVM host's kernel: KVM, vhost-scsi with the
#                             SQ poller and LIO as modules, no debug options
#                     guest   the nested guest's: kvm_guest.config with
#                             virtio_scsi and the CQ poller built in
#                     debug   host plus lockdep, KASAN, kmemleak,
#                             DEBUG_ATOMIC_SLEEP, PROVE_RCU, DEBUG_OBJECTS
#                             (the host VM of make reliability)
#   --print         print the kernel's directory if it is built, else fail
#   --settings      print the configuration's base and settings, build nothing
#
# A configuration is merged onto the make targets of its '# base:' line
# (default x86_64_defconfig), after the configurations its '# include:'
# lines name; where two set one symbol, the later one wins.
#
# The source is Debian's linux-source tarball (SQCQ_KSRC_PKG), extracted once
# into a git tree under SQCQ_CACHE; the series comes from scripts/mkpatches.py
# (the same patches 'make patches' exports) and is applied with git apply,
# then, with PROVE_LOCKING, linux/debug/*.patch (debug-kernel fixes outside
# the series).
# The result is cached by content hash (tarball, series, settings, this
# script): SQCQ_CACHE/kernel-<config>-<hash>/{vmlinuz,System.map,config,release,
# lib/modules/<release>}.  The object tree is kept per configuration, so a
# changed patch rebuilds only what it touches.  Prints the directory.
#
# Boot host or debug as the host VM with SQCQ_L1_KERNEL=<dir>
# (scripts/vm/host-vm.sh), any of them as the nested guests' with
# SQCQ_GUEST_KERNEL=<dir> (tests/run.sh and matrix.py --guest-kernel).
set -euo pipefail
. "$(dirname "$0")/lib/common.sh"

cfg=debug print_only=0 settings_only=0
while [ $# -gt 0 ]; do
	case "$1" in
	--config) [ $# -gt 1 ] || die "--config needs a name (linux/configs/NAME.config)"; cfg=$2; shift 2 ;;
	--print) print_only=1; shift ;;
	--settings) settings_only=1; shift ;;
	-h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown option '$1' (try --help)" ;;
	esac
done
frags() { # NAME [CHAIN] -> its file, after those of the configurations it includes
	local f=$SQCQ_TOP/linux/configs/$1.config inc
	[ -f "$f" ] || die "no configuration '$1' ($f missing; there are: $(cd "$SQCQ_TOP/linux/configs" && ls ./*.config | sed 's|^\./||; s/\.config$//' | paste -sd' '))"
	case " ${2:-} " in *" $1 "*) die "configurations include each other: ${2# } $1" ;; esac
	for inc in $(sed -n 's/^# include: *//p' "$f"); do frags "${inc%.config}" "${2:-} $1"; done
	echo "$f"
}
files=$(frags "$cfg")
# shellcheck disable=SC2086
base=$(sed -n 's/^# base: *//p' $files | tail -1)
base=${base:-x86_64_defconfig}
# The settings asked for, the last word on each symbol winning.
# shellcheck disable=SC2086
settings=$(awk 'match($0, /^CONFIG_[A-Za-z0-9_]+=/) { s = substr($0, 1, RLENGTH - 1) }
	/^# CONFIG_[A-Za-z0-9_]+ is not set$/ { s = $2 }
	s != "" { if (!(s in v)) o[n++] = s; v[s] = $0; s = "" }
	END { for (i = 0; i < n; i++) print v[o[i]] }' $files)
if [ "$settings_only" = 1 ]; then
	echo "# base: $base"; echo "$settings"; exit 0
fi
tarball=/usr/src/$SQCQ_KSRC_PKG.tar.xz
[ -f "$tarball" ] || die "$tarball missing; install $SQCQ_KSRC_PKG (make deps)"
need_cmd make gcc git flex bison bc tar xz

# The series, exactly as 'make patches' exports it (no per-patch build here:
# the whole tree builds below), under a fixed author: the patches are build
# input here, so neither the cache key nor the build depends on who runs it
# (or on a git identity at all).
series=$SQCQ_BUILD/kernel-series
mkdir -p "$SQCQ_BUILD"	# a fresh clone has no build/ yet
/usr/bin/python3 "$SQCQ_TOP/scripts/mkpatches.py" --no-build --author "SQ/CQ polling project <sqcq@localhost>" \
	--out "$series" >"$SQCQ_BUILD/kernel-series.log" 2>&1 ||
	die "could not export the series (log: $SQCQ_BUILD/kernel-series.log)"
patches=$(find "$series" -name '0*.patch' ! -name '0000-*' | sort)
[ -n "$patches" ] || die "the series in $series is empty"
# Then, with lockdep on, fixes the debug kernel needs that are not part
# of the series (linux/debug/: each says why).
if echo "$settings" | grep -qx CONFIG_PROVE_LOCKING=y; then
	patches="$patches $(find "$SQCQ_TOP/linux/debug" -name '*.patch' | sort)"
fi

tarkey=$(stat -c '%s %Y' "$tarball" | sha256sum | cut -c1-12)
# shellcheck disable=SC2086
key=$( { echo "$tarkey $base"; echo "$settings"; cat $patches "$0"; } | sha256sum | cut -c1-16)
dest=$SQCQ_CACHE/kernel-$cfg-$key
if [ -f "$dest/.done" ]; then
	log "kernel: cached $dest ($(cat "$dest/release"))"
	echo "$dest"; exit 0
fi
[ "$print_only" = 0 ] || die "the $cfg kernel for this tree is not built; run 'make kernel KERNEL=$cfg'"
need_root "writing the kernel cache in $SQCQ_CACHE"
mkdir -p "$SQCQ_CACHE"
exec 9>"$SQCQ_CACHE/kernel.lock"
flock 9

# Pristine source as a git tree: resetting it between builds touches only
# the files the series changed, so the kept object tree rebuilds little.
src=$SQCQ_CACHE/kernel-src-$tarkey
if [ ! -f "$src/.done" ]; then
	log "kernel: extracting $tarball (once)"
	rm -rf "$src.tmp"; mkdir -p "$src.tmp"
	tar -xJf "$tarball" -C "$src.tmp" --strip-components=1 || die "could not extract $tarball"
	git -C "$src.tmp" init -q
	# Debian's tree ignores its own top level (.gitignore: /*).
	git -C "$src.tmp" add -f -A .
	git -C "$src.tmp" -c user.name=sqcq -c user.email=sqcq@localhost commit -qm "$SQCQ_KSRC_PKG" ||
		die "could not commit the pristine tree in $src.tmp"
	touch "$src.tmp/.done"
	rm -rf "$src"; mv "$src.tmp" "$src"
fi
git -C "$src" reset -q --hard
git -C "$src" clean -qfdx -e .done
for p in $patches; do
	git -C "$src" apply "$p" || die "$(basename "$p") does not apply to $SQCQ_KSRC_PKG ($src)"
done

obj=$SQCQ_CACHE/kernel-obj-$cfg-$tarkey
mkdir -p "$obj"
blog=$obj/build.log
frag=$obj/sqcq.config
echo "$settings" >"$frag"
log "kernel: configuring ($cfg: $base + $(echo "$files" | sed "s|$SQCQ_TOP/||" | paste -sd' '))"
(
	for t in $base; do make -C "$src" O="$obj" "$t" || exit 1; done &&
	"$src/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "$frag" &&
	make -C "$src" O="$obj" olddefconfig
) >"$blog" 2>&1 || die "configuring failed (log: $blog)"
# Every setting the fragment asks for must have survived olddefconfig (a
# missing dependency drops a symbol silently).
bad=$(grep -E '^CONFIG_[A-Z0-9_]+=' "$frag" | while read -r l; do
	grep -qxF "$l" "$obj/.config" || echo "$l"
done; sed -n 's/^# \(CONFIG_[A-Z0-9_]*\) is not set$/\1/p' "$frag" | while read -r c; do
	grep -qE "^$c=[ym]" "$obj/.config" && echo "# $c is not set"
done || true)
[ -z "$bad" ] || die "the configuration lost: $(echo "$bad" | paste -sd' ') (check their dependencies; $obj/.config)"
# The series' own symbol.
grep -qE '^CONFIG_VIRTIO_SQCQ=[ym]' "$obj/.config" ||
	die "CONFIG_VIRTIO_SQCQ is not set in $obj/.config: the series' Kconfig hooks did not apply"

log "kernel: building with $(nproc) jobs (log: $blog; about 15 min on 2 cores the first time)"
t0=$(date +%s)
# LOCALVERSION set (empty): no "+" for the git tree the source sits in.
make -C "$src" O="$obj" LOCALVERSION= -j"$(nproc)" bzImage modules >>"$blog" 2>&1 ||
	die "the kernel build failed (log: $blog): $(grep -m3 -E 'error:|Error [0-9]' "$blog" | paste -sd' ')"
release=$(make -s -C "$src" O="$obj" LOCALVERSION= kernelrelease)
rm -rf "$dest.tmp"; mkdir -p "$dest.tmp"
make -C "$src" O="$obj" LOCALVERSION= INSTALL_MOD_PATH="$dest.tmp" INSTALL_MOD_STRIP=1 modules_install >>"$blog" 2>&1 ||
	die "modules_install failed (log: $blog)"
cp "$obj/arch/x86/boot/bzImage" "$dest.tmp/vmlinuz"
cp "$obj/System.map" "$dest.tmp/System.map"
cp "$obj/.config" "$dest.tmp/config"
echo "$release" >"$dest.tmp/release"
# The series' drivers, where the configuration puts them: a module for
# =m, listed in modules.builtin for =y (the guest kernel's need no loading).
mdir=$dest.tmp/lib/modules/$release
for m in VHOST_SCSI:vhost/vhost_scsi VIRTIO_SQCQ:virtio/virtio_sqcq SCSI_VIRTIO:scsi/virtio_scsi; do
	ko=kernel/drivers/${m#*:}.ko
	case "$(sed -n "s/^CONFIG_${m%%:*}=//p" "$obj/.config")" in
	m) [ -f "$mdir/$ko" ] || die "the build has no $ko (log: $blog)" ;;
	y) grep -qxF "$ko" "$mdir/modules.builtin" || die "$ko is not in $mdir/modules.builtin (log: $blog)" ;;
	esac
done
touch "$dest.tmp/.done"
rm -rf "$dest"; mv "$dest.tmp" "$dest"
log "kernel: built $release in $(( $(date +%s) - t0 ))s: $dest"
echo "$dest"
