#!/usr/bin/env bash
# Description: the shared policy header (EMA spin budget, completion-CPU
# picker) compiled as is in userspace, with floating point forbidden
# (-mgeneral-regs-only), warnings as errors, and run under valgrind.
# timeout: 300
set -uo pipefail
. "$(dirname "$0")/../scripts/lib/common.sh"
out=${SQCQ_TEST_OUT:?}
gcc -std=gnu11 -O2 -Wall -Wextra -Werror -Wconversion -Wno-sign-conversion \
	-mgeneral-regs-only -I"$SQCQ_TOP/include" \
	-o "$out/policy_test" "$SQCQ_TOP/tests/unit/policy_test.c" ||
	{ echo "FAIL: policy_test does not compile integer-only"; exit 1; }
if command -v valgrind >/dev/null; then
	valgrind -q --error-exitcode=2 "$out/policy_test"
else
	"$out/policy_test"
fi
