#!/usr/bin/env bash
# Build the nested guest's fio from Debian's source of the installed fio
# package, with only the engines the matrix and the tests use (libaio,
# io_uring, psync/pvsync2 and the rest of fio's core).  Debian's binary
# links Ceph, GlusterFS, RDMA, PMEM and NBD: 86 MB of libraries in the
# initramfs that the nested guest unpacked for 92 s of its 194 s boot on
# the debug host VM (every new page an NPT fault into L1's KVM).  This one
# needs libaio, zlib and libc.
#
# Usage: scripts/guest/build-fio.sh [--print-path]
# Output: $SQCQ_CACHE/fio-<key>/fio (built once per version and flags).
set -euo pipefail
. "$(dirname "$0")/../lib/common.sh"

print=0
case "${1:-}" in
--print-path) print=1 ;;
-h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
'') ;;
*) die "unknown option '$1' (try --help)" ;;
esac
ver=$(dpkg-query -W -f='${Version}' fio 2>/dev/null) || true
[ -n "$ver" ] || die "the fio package is not installed: run 'make deps'"
# --disable-native: the binary runs on the nested guest's CPU, not this one.
flags="--disable-native --disable-numa --disable-rdma --disable-rados --disable-rbd --disable-http --disable-gfapi --disable-pmem --disable-xnvme --disable-libzbc --disable-tcmalloc --disable-dfs --disable-libnfs"
key=$( { echo "$ver $flags"; cat "$0"; } | sha256sum | cut -c1-16)
dir=$SQCQ_CACHE/fio-$key
if [ -x "$dir/fio" ] && [ -f "$dir/.done" ]; then
	[ $print = 1 ] && echo "$dir/fio" || log "fio: cached $dir/fio"
	exit 0
fi
need_cmd apt-get dpkg-source make gcc
[ -f /usr/include/libaio.h ] || die "libaio.h missing: install libaio-dev (make deps)"
mkdir -p "$SQCQ_CACHE"
exec 9>"$SQCQ_CACHE/fio.lock"
flock 9
rm -rf "$dir.tmp"; mkdir -p "$dir.tmp"
log "fio: fetching Debian source fio=$ver"
(cd "$dir.tmp" && apt-get source -qq fio="$ver") >"$dir.tmp/fetch.log" 2>&1 ||
	die "apt-get source fio=$ver failed (needs the deb-src entry 'make deps' adds; log: $dir.tmp/fetch.log)"
src=$(find "$dir.tmp" -mindepth 1 -maxdepth 1 -type d -name 'fio-*' | head -1)
[ -n "$src" ] && [ -x "$src/configure" ] || die "no fio tree unpacked in $dir.tmp (log: $dir.tmp/fetch.log)"
log "fio: building $ver with the core engines only (log: $dir.tmp/build.log)"
# shellcheck disable=SC2086
(cd "$src" && ./configure $flags && make -j"$(nproc)" fio) >"$dir.tmp/build.log" 2>&1 ||
	die "the fio build failed: $(grep -m3 -E 'error|Error' "$dir.tmp/build.log" | paste -sd' ') (log: $dir.tmp/build.log)"
# The matrix needs both engines: a configure that did not find libaio
# builds a fio without it, which fails only when a job asks for it.
engines=$("$src/fio" --enghelp 2>&1 | tr -s '\t\n ' ' ')
for e in libaio io_uring pvsync2; do
	[[ " $engines " == *" $e "* ]] || die "the fio built has no $e engine (it has:$engines; log: $dir.tmp/build.log)"
done
strip -o "$dir.tmp/fio" "$src/fio"
mv "$dir.tmp/build.log" "$dir.tmp/fio.build.log"
rm -rf "$src" "$dir.tmp"/fio_*
touch "$dir.tmp/.done"
rm -rf "$dir"; mv "$dir.tmp" "$dir"
[ $print = 1 ] && echo "$dir/fio" || log "fio: built $dir/fio ($(du -h "$dir/fio" | cut -f1))"
