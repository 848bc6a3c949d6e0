#!/usr/bin/env bash
# Edit the kernel hook series (linux/series) as git commits.
#
# Usage: scripts/series.sh unpack [DIR]   upstream files + one commit per patch
#        scripts/series.sh export [DIR]   rewrite linux/*.patch from DIR's commits
#
# DIR defaults to build/series.  Edit files there, fold the change into the
# right commit (git commit --fixup=<sha>; git rebase -i --autosquash base),
# then export.  Exported patches are stable: fixed author and dates.
set -euo pipefail
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/ksrc.sh"

cmd=${1:-}
dir=$(readlink -f "${2:-$SQCQ_BUILD/series}")
export GIT_AUTHOR_NAME="SQ/CQ polling project" GIT_AUTHOR_EMAIL="sqcq@localhost"
export GIT_COMMITTER_NAME="$GIT_AUTHOR_NAME" GIT_COMMITTER_EMAIL="$GIT_AUTHOR_EMAIL"
export GIT_AUTHOR_DATE="2026-01-01T00:00:00Z" GIT_COMMITTER_DATE="2026-01-01T00:00:00Z"

case "$cmd" in
unpack)
	[ ! -e "$dir" ] || die "$dir exists; remove it or name another directory"
	src=$(ksrc_dir)
	mkdir -p "$dir"
	git -C "$dir" init -q
	upstream_files | while read -r f; do
		install -D -m644 "$src/$f" "$dir/$f"
	done
	git -C "$dir" add -A
	git -C "$dir" commit -qm "upstream files"
	git -C "$dir" tag base
	grep -v '^#' "$SQCQ_TOP/linux/series" | sed '/^$/d' | while read -r p; do
		git -C "$dir" am -q --keep-cr "$SQCQ_TOP/linux/$p" ||
			die "patch $p does not apply in $dir"
	done
	log "series unpacked in $dir ($(git -C "$dir" rev-list --count base..HEAD) commits)"
	;;
export)
	[ -d "$dir/.git" ] || die "$dir is not an unpacked series (run: scripts/series.sh unpack)"
	rm -f "$SQCQ_TOP"/linux/[0-9][0-9][0-9][0-9]-*.patch
	git -C "$dir" format-patch -q --zero-commit --no-signature -N -o "$SQCQ_TOP/linux" base..HEAD
	{
		sed -n '/^#/p' "$SQCQ_TOP/linux/series"
		(cd "$SQCQ_TOP/linux" && ls [0-9][0-9][0-9][0-9]-*.patch)
	} >"$SQCQ_TOP/linux/series.new"
	mv "$SQCQ_TOP/linux/series.new" "$SQCQ_TOP/linux/series"
	log "exported $(grep -vc '^#' "$SQCQ_TOP/linux/series") patches to linux/"
	;;
-h|--help|*) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; [ "$cmd" = -h ] || [ "$cmd" = --help ] ;;
esac
