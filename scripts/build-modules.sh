#!/usr/bin/env bash
# Build the project's vhost_scsi.ko and virtio_scsi.ko out of tree.
#
# Usage: scripts/build-modules.sh [--series FILE]
#
# Stages build/kmod: the upstream files named in linux/upstream-files are
# copied from the kernel source (the linux-source tarball, or KSRC=<tree>),
# the patches named in linux/series are applied, the project's own drivers/
# and include/ files are added, and Kbuild builds against KDIR (default: the
# Debian headers of SQCQ_KVER).  Unchanged files keep their timestamps, so a
# one-line change rebuilds in seconds.
#
# Environment: KDIR=<build tree>  KSRC=<kernel source tree>
set -euo pipefail
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/ksrc.sh"

series=$SQCQ_TOP/linux/series
while [ $# -gt 0 ]; do
	case "$1" in
	--series) series=$(readlink -f "$2"); shift 2 ;;
	-h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown option '$1' (try --help)" ;;
	esac
done
need_cmd make gcc patch tar xz

KDIR=${KDIR:-/lib/modules/$SQCQ_KVER/build}
[ -f "$KDIR/Makefile" ] ||
	die "KDIR=$KDIR is not a kernel build tree (no Makefile); install linux-headers-$SQCQ_KVER (make deps) or point KDIR at a configured 6.12 tree"
[ -f "$KDIR/Module.symvers" ] || [ -f "$KDIR/include/config/auto.conf" ] ||
	die "KDIR=$KDIR is not configured (no include/config/auto.conf); run 'make modules_prepare' there"
kdir_ver=$(make -s -C "$KDIR" kernelversion 2>/dev/null | tail -1) ||
	die "cannot read the kernel version of KDIR=$KDIR"
case "$kdir_ver" in 6.12|6.12.*) ;; *) die "KDIR=$KDIR is Linux $kdir_ver; the series is for 6.12" ;; esac

src=$(ksrc_dir)
src_ver=$(ksrc_version "$src")
upstream_files=$(upstream_files)
[ "$src_ver" = "$kdir_ver" ] ||
	die "kernel source is $src_ver but KDIR is $kdir_ver: the patched files must match the headers (apt-get install $SQCQ_KSRC_PKG linux-headers-$SQCQ_KVER with the same version, or set KSRC/KDIR)"

# Stage into a scratch tree, then sync changed files only.
out=$SQCQ_BUILD/kmod
stage=$SQCQ_BUILD/kmod.stage
rm -rf "$stage"; mkdir -p "$stage"
for f in $upstream_files; do
	[ -f "$src/$f" ] || die "upstream file $f missing in $src"
	install -D -m644 "$src/$f" "$stage/$f"
done
n=0
while read -r p; do
	case "$p" in ''|'#'*) continue ;; esac
	pf=$(dirname "$series")/$p
	[ -f "$pf" ] || die "patch $p listed in $series does not exist"
	if ! patch -d "$stage" -p1 --batch --forward --no-backup-if-mismatch -s <"$pf" >"$SQCQ_BUILD/patch.log" 2>&1; then
		die "patch $p does not apply to Linux $src_ver ($(head -c 300 "$SQCQ_BUILD/patch.log" | tr '\n' ' ')); log: $SQCQ_BUILD/patch.log"
	fi
	n=$((n + 1))
done <"$series"
(cd "$SQCQ_TOP" && find drivers include -type f \( -name '*.c' -o -name '*.h' \) -print0 |
	xargs -0 -r -I{} install -D -m644 {} "$stage/{}")
install -m644 "$SQCQ_TOP/scripts/kbuild/Kbuild" "$stage/Kbuild"
install -m644 "$SQCQ_TOP/scripts/kbuild/Kbuild.vhost" "$stage/drivers/vhost/Kbuild"
install -m644 "$SQCQ_TOP/scripts/kbuild/Kbuild.scsi" "$stage/drivers/scsi/Kbuild"
install -D -m644 "$SQCQ_TOP/scripts/kbuild/Kbuild.virtio" "$stage/drivers/virtio/Kbuild"

mkdir -p "$out"
(cd "$stage" && find . -type f) | while read -r f; do
	cmp -s "$stage/$f" "$out/$f" || install -D -m644 "$stage/$f" "$out/$f"
done
# Files that left the stage (a dropped patch or project file) leave the build.
(cd "$out" && find . -type f \( -name '*.c' -o -name '*.h' -o -name Kbuild \)) | while read -r f; do
	[ -e "$stage/$f" ] || rm -f "$out/$f"
done
rm -rf "$stage"

log "building modules ($n patches) against $KDIR"
make -C "$KDIR" M="$out" -j"$(nproc)" modules >"$SQCQ_BUILD/kbuild.log" 2>&1 ||
	die "module build failed: $(grep -m3 -E 'error|Error' "$SQCQ_BUILD/kbuild.log" | tr '\n' ' ') (log: $SQCQ_BUILD/kbuild.log)"
for m in drivers/vhost/vhost_scsi.ko drivers/scsi/virtio_scsi.ko drivers/virtio/virtio_sqcq.ko; do
	[ -f "$out/$m" ] || die "build finished but $out/$m is missing (log: $SQCQ_BUILD/kbuild.log)"
done
log "built vhost_scsi.ko virtio_scsi.ko virtio_sqcq.ko in $out/drivers"
