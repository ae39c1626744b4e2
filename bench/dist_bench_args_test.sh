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
# Integers go through IntInRange: CLI11's PositiveNumber printed a
# 250-digit bound and never named the flag.
int64_max=9223372036854775807
for bad in "--rows 0|--rows: expected an integer in 1..$int64_max, got '0'" \
           "--rows 10abc|--rows: expected an integer in 1..$int64_max, got '10abc'" \
           "--rows 99999999999999999999|--rows: expected an integer in 1..$int64_max, got '99999999999999999999'" \
           "--batch 0|--batch: expected an integer in 1..$int64_max, got '0'" \
           "--iterations 0|--iterations: expected an integer in 1..2147483647, got '0'" \
           "--ranks abc|--ranks: expected an integer in 1..64, got 'abc'" \
           "--hosts 0,,1|--hosts: expected an integer in 0..16, got ''" \
           "--hosts 0,0|dist_bench: --hosts lists 0 twice; expected each layout once"; do
  args="${bad%%|*}" message="${bad#*|}"
  # shellcheck disable=SC2086
  "$BENCH" $args >/dev/null 2>"$err"
  [ $? -eq 2 ] || fail "$args: expected exit 2; $(cat "$err")"
  [ "$(head -1 "$err")" = "$message" ] || fail "$args: got '$(head -1 "$err")', expected '$message'"
done
echo PASS
