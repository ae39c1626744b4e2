#!/usr/bin/env bash
# Checks pipeline_bench's exit status (bench_main.h): a benchmark that
# reports an error makes the run exit 1 and is named on stderr (Google
# Benchmark's own main exits 0 then), a filter that matches nothing and an
# unknown flag exit 2.
set -uo pipefail
BENCH="$1"
out="$TEST_TMPDIR/out" err="$TEST_TMPDIR/err"
fail() { echo "FAIL: $*" >&2; exit 1; }

FAULTLINE_BENCH_GRAPH="$TEST_TMPDIR/no-such-graph" "$BENCH" \
  --benchmark_filter='^BM_SampleMultiLayer/weighted:0/threads:1/' >"$out" 2>"$err"
[ $? -eq 1 ] || fail "a benchmark with no graph: expected exit 1; $(cat "$out" "$err")"
grep -q "^pipeline_bench: BM_SampleMultiLayer/weighted:0/threads:1/.*: .*no-such-graph" "$err" ||
  fail "the failed benchmark is not named: $(cat "$err")"
grep -q "^pipeline_bench: 1 of the benchmarks that ran reported an error; their numbers are not results$" "$err" ||
  fail "no summary: $(cat "$err")"

"$BENCH" --benchmark_filter='^NoSuchBenchmark$' >"$out" 2>"$err"
[ $? -eq 2 ] || fail "a filter that matches nothing: expected exit 2"
grep -q "^pipeline_bench: no benchmark matches --benchmark_filter" "$err" || fail "no-match message: $(cat "$err")"

"$BENCH" --no-such-flag >"$out" 2>"$err"
[ $? -eq 2 ] || fail "an unknown flag: expected exit 2"
# Values Google Benchmark itself mishandles (usage and exit 0; an abort):
# refused with exit 2 before it sees them.
for bad in "--benchmark_format=xml|--benchmark_format is 'xml'; expected console, json or csv" \
           "--benchmark_out_format=xml|--benchmark_out_format is 'xml'; expected console, json or csv" \
           "--benchmark_repetitions=-1|--benchmark_repetitions is '-1'; expected a number of repetitions >= 1" \
           "--benchmark_repetitions=x|--benchmark_repetitions is 'x'; expected a number of repetitions >= 1"; do
  flag="${bad%%|*}" message="${bad#*|}"
  "$BENCH" --benchmark_filter='^NoSuchBenchmark$' "$flag" >"$out" 2>"$err"
  [ $? -eq 2 ] || fail "$flag: expected exit 2; $(cat "$err")"
  [ "$(cat "$err")" = "pipeline_bench: $message" ] || fail "$flag: $(cat "$err")"
done
echo PASS
