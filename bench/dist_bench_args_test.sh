#!/usr/bin/env bash
# Checks that dist_bench refuses sizes it cannot hold before it starts any
# rank: rows or a batch whose bytes overflow int64, and more hosts than
# ranks, are usage errors (exit 2) that name the flags.
set -uo pipefail
BENCH="$1"
err="$TEST_TMPDIR/err"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$BENCH" --rows 100000000000000 --dim 65536 >/dev/null 2>"$err"
[ $? -eq 2 ] || fail "--rows overflow: expected exit 2; $(cat "$err")"
grep -qx "dist_bench: --rows 100000000000000 x --dim 65536 float32 rows overflow int64 bytes; expected fewer" "$err" ||
  fail "--rows overflow: $(cat "$err")"
"$BENCH" --batch 100000000000000 --dim 65536 >/dev/null 2>"$err"
[ $? -eq 2 ] || fail "--batch overflow: expected exit 2"
grep -q "^dist_bench: --batch 100000000000000 x --dim 65536" "$err" || fail "--batch overflow: $(cat "$err")"
"$BENCH" --ranks 2 --hosts 3 >/dev/null 2>"$err"
[ $? -eq 2 ] || fail "--hosts 3 --ranks 2: expected exit 2"
grep -qx "dist_bench: --hosts 3 is more than --ranks 2" "$err" || fail "--hosts: $(cat "$err")"
echo PASS
