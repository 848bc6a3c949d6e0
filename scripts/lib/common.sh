# shellcheck shell=bash
# Common helpers for the harness.  Source it; do not run it.
#
# Conventions: every failure ends in die() with one line that names what
# failed and where its log is; nothing retries silently.

SQCQ_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export SQCQ_TOP
# shellcheck source=../versions.env
. "$SQCQ_TOP/scripts/versions.env"
export SQCQ_KVER SQCQ_KSRC_PKG SQCQ_KSRC_UPSTREAM SQCQ_QEMU_SRC_VERSION

# Builds that are slow (QEMU, kernels) are cached outside the repo, keyed by
# content hash, so a clean clone (CI) reuses them.
SQCQ_CACHE=${SQCQ_CACHE:-/var/cache/sqcq}
# Fast, per-checkout build outputs live in an ignored directory.
SQCQ_BUILD=${SQCQ_BUILD:-$SQCQ_TOP/build}
export SQCQ_CACHE SQCQ_BUILD

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }
need_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 ||
			die "'$c' not found; run 'make deps' (scripts/deps.sh) to install what the project needs"
	done
}
need_root() {
	[ "$(id -u)" = 0 ] || die "$1 needs root (run it with sudo)"
}
# hash_of FILE...: stable content hash of files (names relative to top).
hash_of() {
	(cd "$SQCQ_TOP" && sha256sum "$@" | sha256sum | cut -c1-16)
}
