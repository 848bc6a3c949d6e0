#!/usr/bin/env bash
# Description: the upstream series (make patches): the project exported
# as git format-patch against the 6.12 tree with a cover letter; every
# patch passes checkpatch.pl --strict and the tree builds at every patch
# (vhost_scsi.ko, virtio_sqcq.ko, virtio_scsi.ko as far as they exist).
# timeout: 900
set -uo pipefail
. "$(dirname "$0")/../scripts/lib/common.sh"
out=${SQCQ_TEST_OUT:?run tests through tests/run.sh}
"$SQCQ_TOP/scripts/mkpatches.py" --out "$out/patches"
rc=$?
n=$(ls "$out/patches" 2>/dev/null | wc -l)
[ "$n" -ge 7 ] || { echo "FAIL: expected a cover letter and 6 patches, got $n files"; exit 1; }
grep -q 'SQ/CQ doorbell polling' "$out/patches/0000-cover-letter.patch" ||
	{ echo "FAIL: the cover letter has no subject"; exit 1; }
[ $rc = 0 ] || { echo "FAIL: mkpatches reported failures (above)"; exit 1; }
echo "series ok: $((n - 1)) patches in $out/patches"
