#!/usr/bin/env bash
# Description: the upstream series (make patches): the project exported
# as git format-patch against the 6.12 tree with a cover letter; every
# patch passes checkpatch.pl --strict and the tree builds at every patch
# (vhost_scsi.ko, virtio_sqcq.ko, virtio_scsi.ko as far as they exist);
# every patch is authored and signed off by the submitter (--author, or
# git's identity), and with no identity make patches refuses.
# timeout: 900
set -uo pipefail
. "$(dirname "$0")/../scripts/lib/common.sh"
out=${SQCQ_TEST_OUT:?run tests through tests/run.sh}
mk=$SQCQ_TOP/scripts/mkpatches.py
scratch=$out/identity
mkdir -p "$scratch/nogit"
# git looks no further up than the scratch directory (the checkout's own
# config may have an identity).
export GIT_CEILING_DIRECTORIES=$scratch

# No identity at all: git sees no global or system config from a
# directory outside any repository.
(cd "$scratch/nogit" && GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 \
	"$mk" --no-build --out "$scratch/none") >"$scratch/none.log" 2>&1
rc=$?
[ $rc = 2 ] || { echo "FAIL: with no git identity mkpatches exited $rc, expected 2:"; cat "$scratch/none.log"; exit 1; }
grep -q "no author for the patches: git has no user.name and no user.email" "$scratch/none.log" ||
	{ echo "FAIL: the refusal does not say why:"; cat "$scratch/none.log"; exit 1; }
[ ! -e "$scratch/none" ] || { echo "FAIL: a refused run wrote $scratch/none"; exit 1; }
echo "no identity: refused (exit 2) with: $(grep -m1 'no author' "$scratch/none.log")"

# A malformed --author is refused too.
"$mk" --no-build --author "nobody" --out "$scratch/bad" >"$scratch/bad.log" 2>&1 &&
	{ echo "FAIL: --author nobody was accepted"; exit 1; }
grep -q "is not 'Name <email>'" "$scratch/bad.log" || { echo "FAIL: bad --author:"; cat "$scratch/bad.log"; exit 1; }

# git's identity, from a config of the submitter's own.
printf '[user]\n\tname = Ada Submitter\n\temail = ada@example.org\n' >"$scratch/gitconfig"
(cd "$scratch/nogit" && GIT_CONFIG_GLOBAL=$scratch/gitconfig GIT_CONFIG_NOSYSTEM=1 \
	"$mk" --no-build --out "$scratch/git") >"$scratch/git.log" 2>&1 ||
	{ echo "FAIL: mkpatches with git's identity:"; tail -20 "$scratch/git.log"; exit 1; }

signed_by() {	# dir who: every patch (cover letter included) from and signed by who
	local f n=0
	for f in "$1"/*.patch; do
		grep -q "^From: $2\$" "$f" || { echo "FAIL: $(basename "$f") is not from '$2': $(grep -m1 '^From: ' "$f")"; return 1; }
		case $f in *0000-cover-letter.patch) ;; *)
			grep -q "^Signed-off-by: $2\$" "$f" || { echo "FAIL: $(basename "$f") lacks 'Signed-off-by: $2'"; return 1; }
			grep -q "sqcq@localhost" "$f" && { echo "FAIL: $(basename "$f") still names sqcq@localhost"; return 1; } ;;
		esac
		n=$((n + 1))
	done
	echo "$n files from and signed off by $2"
}
signed_by "$scratch/git" "Ada Submitter <ada@example.org>" || exit 1

# The full check (checkpatch --strict, a build at every patch), as --author.
"$mk" --author "Tess Tester <tess@example.org>" --out "$out/patches"
rc=$?
n=$(ls "$out/patches" 2>/dev/null | wc -l)
[ "$n" -ge 7 ] || { echo "FAIL: expected a cover letter and 6 patches, got $n files"; exit 1; }
grep -q 'SQ/CQ doorbell polling' "$out/patches/0000-cover-letter.patch" ||
	{ echo "FAIL: the cover letter has no subject"; exit 1; }
[ $rc = 0 ] || { echo "FAIL: mkpatches reported failures (above)"; exit 1; }
signed_by "$out/patches" "Tess Tester <tess@example.org>" || exit 1
echo "series ok: $((n - 1)) patches in $out/patches"
