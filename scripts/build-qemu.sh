#!/usr/bin/env bash
# Build a minimal qemu-system-x86_64 from Debian's QEMU source with the
# project's series applied: one binary for both of the harness's uses
# (KVM with vhost-kernel and the qemu/ series for the nested guests; TCG
# with vhost-user and the qemu/l0 fixes for the host VM), one build on a
# fresh machine.
#
# Usage: scripts/build-qemu.sh [--print-path] [--l0 | --l0-trace]
#   --print-path   print the binary's path (building it first if needed)
#   --l0           the same build, as the emulator that runs the host VM
#                  under TCG (no usable KVM): the qemu/l0 series fixes
#                  nested SVM under multi-threaded TCG (lost GIF/NPT
#                  updates on CPU 0: docs/design.md, "Running on TCG").
#                  --print-path then prints a wrapper that finds the
#                  firmware of Debian's qemu-system-x86 package;
#                  scripts/vm/host-vm.sh uses it unless SQCQ_L0_QEMU is set.
#   --l0-trace     a build of its own (TCG only): the qemu/l0-trace series, a per-CPU trace
#                  of SVM transitions dumped on a nested guest's triple
#                  fault, a #VMEXIT outside guest mode, an event with GIF
#                  clear, a host #DF ("SQCQ-L0:" lines on the host VM's
#                  console log); use it as SQCQ_L0_QEMU.
#
# The result is cached in $SQCQ_CACHE/qemu-<hash>, the hash covering the
# source version, the configure flags and the series, so a second run takes
# seconds.
set -euo pipefail
. "$(dirname "$0")/lib/common.sh"

print=0 l0=0 series="$SQCQ_TOP/qemu/series $SQCQ_TOP/qemu/l0/series"
# What the binary depends on: the source version, the configure flags and
# the series.  (Editing this script otherwise does not force a rebuild.)
configure_flags="--target-list=x86_64-softmmu --without-default-features --enable-kvm --enable-tcg --enable-vhost-kernel --enable-vhost-user --disable-docs --disable-werror --disable-install-blobs"
for a in "$@"; do
	case "$a" in
	--print-path) print=1 ;;
	--l0|--l0-trace)
		[ $l0 = 0 ] || die "--l0 and --l0-trace are one build each: pick one"
		l0=1
		if [ "$a" = --l0-trace ]; then
			series=$SQCQ_TOP/qemu/l0-trace/series
			configure_flags="--target-list=x86_64-softmmu --without-default-features --enable-tcg --enable-vhost-user --disable-docs --disable-werror --disable-install-blobs"
		fi ;;
	-h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown option '$a' (try --help)" ;;
	esac
done

# The patches, in order, as paths: each series file names its patches
# relative to its own directory.
patches=$(for s in $series; do grep -v '^#' "$s" | sed '/^$/d' | sed "s|^|$(dirname "$s")/|"; done)
key=$( { echo "$SQCQ_QEMU_SRC_VERSION $configure_flags"; cat $series;
	for p in $patches; do cat "$p"; done; } | sha256sum | cut -c1-16)
dir=$SQCQ_CACHE/qemu-$key
bin=$dir/build/qemu-system-x86_64
[ $l0 = 0 ] || bin=$dir/qemu-l0

mkdir -p "$SQCQ_CACHE"
# One build at a time (a second caller waits, then finds it cached).
exec 9>"$SQCQ_CACHE/qemu.lock"
flock 9
if [ -x "$bin" ] && [ -f "$dir/.done" ]; then
	[ $print = 1 ] && echo "$bin" || log "qemu: cached $bin"
	exit 0
fi
need_cmd apt-get dpkg-source ninja meson pkg-config patch

# 1. Debian's source, unpacked once per version.
ver=$SQCQ_QEMU_SRC_VERSION
srcdir=$SQCQ_CACHE/qemu-src-${ver//[:+~]/_}
if [ ! -f "$srcdir/.done" ]; then
	log "qemu: fetching Debian source qemu=$ver"
	rm -rf "$srcdir"; mkdir -p "$srcdir"
	(cd "$srcdir" && apt-get source -qq qemu="$ver") >"$srcdir.log" 2>&1 ||
		die "apt-get source qemu=$ver failed (needs the deb-src entry 'make deps' adds; log: $srcdir.log)"
	tree=$(find "$srcdir" -mindepth 1 -maxdepth 1 -type d -name 'qemu-*' | head -1)
	[ -n "$tree" ] && [ -f "$tree/configure" ] || die "no QEMU tree unpacked in $srcdir (log: $srcdir.log)"
	mv "$tree" "$srcdir/tree"; touch "$srcdir/.done"
fi

# 2. Our series on a fresh copy.
log "qemu: preparing $dir"
rm -rf "$dir"; mkdir -p "$dir"
cp -a "$srcdir/tree" "$dir/src"
for p in $patches; do
	patch -d "$dir/src" -p1 --batch --forward -s <"$p" >"$dir/patch.log" 2>&1 ||
		die "qemu patch ${p#"$SQCQ_TOP"/} does not apply to qemu $ver (log: $dir/patch.log)"
done

# 3. Minimal build.
mkdir -p "$dir/build"
log "qemu: configuring (log: $dir/build.log)"
# shellcheck disable=SC2086
(cd "$dir/build" && ../src/configure $configure_flags) >"$dir/build.log" 2>&1 ||
	die "qemu configure failed: $(tail -3 "$dir/build.log" | tr '\n' ' ') (log: $dir/build.log)"
log "qemu: building (a few minutes; log: $dir/build.log)"
ninja -C "$dir/build" -j"$(nproc)" qemu-system-x86_64 >>"$dir/build.log" 2>&1 ||
	die "qemu build failed: $(grep -m3 'error' "$dir/build.log" | tr '\n' ' ') (log: $dir/build.log)"
[ -x "$dir/build/qemu-system-x86_64" ] || die "qemu build finished without $dir/build/qemu-system-x86_64 (log: $dir/build.log)"
# The host VM's emulator: the binary with the firmware of Debian's
# packages of the same QEMU version.
printf '#!/bin/sh\nexec "%s" -L /usr/share/qemu -L /usr/share/seabios "$@"\n' \
	"$dir/build/qemu-system-x86_64" >"$dir/qemu-l0"
chmod +x "$dir/qemu-l0"
rm -rf "$dir/src/.git"
touch "$dir/.done"
[ $print = 1 ] && echo "$bin" || log "qemu: built $bin"
