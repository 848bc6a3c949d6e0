#!/usr/bin/env bash
# Build the nested guest's initramfs from this machine's files: static
# busybox, fio (scripts/guest/build-fio.sh) and the libraries it links, the kernel modules for a SCSI disk
# on virtio (stock and the project's virtio_scsi.ko), and scripts/guest/init.
#
# Usage: scripts/guest/mkinitramfs.sh [--print-path]
# Output: build/guest/initramfs.cpio.zst (rebuilt only when an input changed).
set -euo pipefail
. "$(dirname "$0")/../lib/common.sh"

print=0
case "${1:-}" in
--print-path) print=1 ;;
-h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
'') ;;
*) die "unknown option '$1' (try --help)" ;;
esac
need_cmd cpio zstd xz ldd
[ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1 || die "static busybox missing: install busybox-static (make deps)"
# fio with the core engines only (Debian's links 86 MB of libraries).
fio=$("$SQCQ_TOP/scripts/guest/build-fio.sh" --print-path)
moddir=/lib/modules/$SQCQ_KVER
[ -f "$moddir/modules.dep" ] || die "$moddir/modules.dep missing: install linux-image-$SQCQ_KVER (make deps)"
proj_ko=$SQCQ_BUILD/kmod/drivers/scsi/virtio_scsi.ko
proj_lib=$SQCQ_BUILD/kmod/drivers/virtio/virtio_sqcq.ko
out=$SQCQ_BUILD/guest/initramfs.cpio.zst
# SQCQ_GUEST_KERNEL=<dir of 'make kernel'>: for that kernel, whose tree
# carries the series (its virtio_scsi is the project's; there is no stock
# one to fall back to).  The guest kernel (KERNEL=guest) has it built in:
# then the initramfs holds no module at all.
builtin=0
if [ -n "${SQCQ_GUEST_KERNEL:-}" ]; then
	[ -f "$SQCQ_GUEST_KERNEL/.done" ] || die "SQCQ_GUEST_KERNEL=$SQCQ_GUEST_KERNEL is not a kernel built by 'make kernel'"
	rel=$(cat "$SQCQ_GUEST_KERNEL/release")
	moddir=$SQCQ_GUEST_KERNEL/lib/modules/$rel
	proj_ko=$moddir/kernel/drivers/scsi/virtio_scsi.ko
	proj_lib=$moddir/kernel/drivers/virtio/virtio_sqcq.ko
	out=$SQCQ_BUILD/guest/initramfs-$rel.cpio.zst
	if grep -qxF kernel/drivers/scsi/virtio_scsi.ko "$moddir/modules.builtin"; then
		grep -qxF kernel/drivers/virtio/virtio_sqcq.ko "$moddir/modules.builtin" ||
			die "$SQCQ_GUEST_KERNEL has virtio_scsi built in but not virtio_sqcq"
		builtin=1 proj_ko='' proj_lib=
	fi
fi
if [ $builtin = 0 ] && { [ ! -f "$proj_ko" ] || [ ! -f "$proj_lib" ]; }; then
	die "$proj_ko or $proj_lib missing: run 'make modules' first"
fi

# shellcheck disable=SC2086
key=$( { echo "${SQCQ_GUEST_KERNEL:-}"; cat "$SQCQ_TOP/scripts/guest/init" "$0" $proj_ko $proj_lib "$fio" /bin/busybox; } | sha256sum | cut -c1-16)
if [ -f "$out" ] && [ "$(cat "$out.key" 2>/dev/null)" = "$key" ]; then
	[ $print = 1 ] && echo "$out"
	exit 0
fi

root=$SQCQ_BUILD/guest/root
[ -z "${SQCQ_GUEST_KERNEL:-}" ] || root=$root-$rel
rm -rf "$root"; mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,lib/stock,lib/sqcq,etc}
cp /bin/busybox "$root/bin/busybox"
install -m755 "$SQCQ_TOP/scripts/guest/init" "$root/init"
# fio and its shared libraries, at the paths the loader expects.
cp "$fio" "$root/bin/fio"
ldd "$fio" | awk '/=> \// {print $3} /^\t\/lib|^\t\/usr/ {print $1}' | while read -r lib; do
	install -D "$(readlink -f "$lib")" "$root$lib"
done
# Modules for virtio_scsi and what it depends on, decompressed (busybox
# insmod cannot read .ko.xz), in dependency order in lib/deps.
deps_of() { # module name -> its path and those of its dependencies, deepest first
	# (nothing for one built in)
	grep -q "/$1\.ko\$" "$moddir/modules.builtin" 2>/dev/null && return
	local path; path=$(awk -F: -v m="/$1.ko" 'index($1, m) {print $0; exit}' "$moddir/modules.dep")
	[ -n "$path" ] || die "module $1 not in $moddir/modules.dep"
	local d
	for d in ${path#*:}; do deps_of "$(basename "$d" | sed 's/\.ko.*//')"; done
	echo "${path%%:*}"
}
: >"$root/lib/deps"
# virtio_blk: the blk-iothread peer (bench/modes.toml), loaded by its mode
# only; a kernel that has it built in (make kernel's x86_64_defconfig) needs
# none.
blk=
grep -q '/virtio_blk\.ko' "$moddir/modules.builtin" 2>/dev/null || blk=virtio_blk
for m in $( { deps_of virtio_scsi; deps_of sd_mod; [ -z "$blk" ] || deps_of virtio_blk; } | awk '!seen[$0]++'); do
	name=$(basename "$m" | sed 's/\.ko.*//')
	case "$m" in
	*.xz) xz -dc "$moddir/$m" >"$root/lib/stock/$name.ko" ;;
	*.zst) zstd -qdc "$moddir/$m" >"$root/lib/stock/$name.ko" ;;
	*) cp "$moddir/$m" "$root/lib/stock/$name.ko" ;;
	esac
	case "$name" in virtio_scsi|virtio_sqcq|virtio_blk) ;; *) echo "$name" >>"$root/lib/deps" ;; esac
done
if [ $builtin = 0 ]; then
	cp "$proj_ko" "$root/lib/sqcq/virtio_scsi.ko"
	cp "$proj_lib" "$root/lib/sqcq/virtio_sqcq.ko"
fi
mkdir -p "$(dirname "$out")"
# zstd: the nested guest unpacks it 3.5 times faster than gzip (Debian's
# kernel has RD_ZSTD; so has make kernel's x86_64_defconfig).
(cd "$root" && find . | cpio -o -H newc --quiet | zstd -q -10 -T0) >"$out.tmp"
mv "$out.tmp" "$out"; echo "$key" >"$out.key"
[ $print = 1 ] && echo "$out" || log "guest initramfs: $out ($(du -h "$out" | cut -f1))"
