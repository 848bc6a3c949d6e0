# shellcheck shell=bash
# The upstream kernel files the project patches: from KSRC=<tree> if set,
# else extracted once (cached by tarball and file list) from Debian's
# linux-source tarball.  Source it after common.sh.

upstream_files() {
	grep -v '^#' "$SQCQ_TOP/linux/upstream-files" | sed '/^$/d'
}

# ksrc_dir: print the directory holding the upstream files.
ksrc_dir() {
	if [ -n "${KSRC:-}" ]; then
		[ -f "$KSRC/Makefile" ] || die "KSRC=$KSRC is not a kernel source tree (no Makefile)"
		echo "$KSRC"
		return
	fi
	local tarball=/usr/src/$SQCQ_KSRC_PKG.tar.xz files key src top
	[ -f "$tarball" ] || die "$tarball missing; install $SQCQ_KSRC_PKG (make deps) or set KSRC=<6.12 tree>"
	files=$(upstream_files)
	key=$(printf '%s\n%s\n' "$(stat -c '%s %Y' "$tarball")" "$files" | sha256sum | cut -c1-12)
	src=$SQCQ_CACHE/ksrc-$key
	if [ ! -f "$src/.done" ]; then
		log "extracting upstream files from $tarball"
		rm -rf "$src.tmp"; mkdir -p "$src.tmp"
		top=$(basename "$tarball" .tar.xz)
		# shellcheck disable=SC2046
		tar -xJf "$tarball" -C "$src.tmp" --strip-components=1 "$top/Makefile" \
			$(printf "$top/%s " $files) ||
			die "could not extract $files from $tarball"
		touch "$src.tmp/.done"; rm -rf "$src"; mv "$src.tmp" "$src"
	fi
	echo "$src"
}

# ksrc_version DIR: the kernel version of a source tree (from its Makefile).
ksrc_version() {
	sed -n 's/^VERSION = //p; s/^PATCHLEVEL = //p; s/^SUBLEVEL = //p' "$1/Makefile" | paste -sd.
}
