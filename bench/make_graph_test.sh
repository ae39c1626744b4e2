#!/usr/bin/env bash
# Tests make_graph's reuse: a graph is reused only when make_graph.json
# records the same parameters (seed included), a missing record means
# regenerate, and sizes too large to build fail at once, writing nothing.
set -uo pipefail
MAKE_GRAPH="$1"
source "$(dirname "$0")/check_lib.sh"
run() {  # run <args...>: prints the "reused" field of --json
  "$MAKE_GRAPH" --out "$WORK/g" --nodes 100 --edges 1000 --json "$@" 2>"$WORK/stderr" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["reused"])'
}

check "first run writes" False "$(run --seed 1)"
cp "$WORK/g/indices.npy" "$WORK/seed1.npy"
check "the record" '{"edges":1000,"generator":"rmat-v1","nodes":100,"seed":1,"weighted":true}' \
  "$(cat "$WORK/g/make_graph.json")"
check "same parameters reuse" True "$(run --seed 1)"
check "another seed regenerates" False "$(run --seed 2)"
if cmp -s "$WORK/g/indices.npy" "$WORK/seed1.npy"; then
  echo "FAIL: --seed 2 left the seed 1 graph in place" >&2
  failures=$((failures + 1))
fi
check "the record names the new seed" 2 \
  "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["seed"])' "$WORK/g/make_graph.json")"
check "then it is reused" True "$(run --seed 2)"
check "back to seed 1 regenerates" False "$(run --seed 1)"
cmp -s "$WORK/g/indices.npy" "$WORK/seed1.npy" || { echo "FAIL: seed 1 is not reproduced" >&2; failures=$((failures + 1)); }
rm "$WORK/g/make_graph.json"
check "a missing record regenerates" False "$(run --seed 1)"
echo '{"truncated' >"$WORK/g/make_graph.json"
check "a corrupt record regenerates" False "$(run --seed 1)"
check "--force regenerates" False "$(run --seed 1 --force)"
# A rewrite that fails halfway leaves no record, so its mixed files (seed 2's
# indptr.npy, seed 1's indices.npy) are not reused later.
rm "$WORK/g/indices.npy" && mkdir "$WORK/g/indices.npy"  # Save cannot rename onto it
"$MAKE_GRAPH" --out "$WORK/g" --nodes 100 --edges 1000 --seed 2 2>"$WORK/stderr" >/dev/null
check "a failed rewrite's exit status" 1 "$?"
check "a failed rewrite leaves no record" no "$([ -e "$WORK/g/make_graph.json" ] && echo yes || echo no)"
rmdir "$WORK/g/indices.npy" && cp "$WORK/seed1.npy" "$WORK/g/indices.npy"
check "a half-rewritten graph regenerates" False "$(run --seed 1)"
# A FIFO as the record: opening it would wait for a writer forever. It is no
# record: the graph regenerates and a real record replaces it.
rm "$WORK/g/make_graph.json" && mkfifo "$WORK/g/make_graph.json"
check "a FIFO record regenerates (without a hang)" False "$(timeout 60 "$MAKE_GRAPH" --out "$WORK/g" --nodes 100 \
  --edges 1000 --seed 1 --json 2>"$WORK/stderr" | python3 -c 'import json, sys; print(json.load(sys.stdin)["reused"])')"
"$MAKE_GRAPH" --out "$WORK/g" --nodes 100 --edges 1000 --seed 1 --json >/dev/full 2>"$WORK/stderr"
check "a summary that cannot reach stdout: exit status" 1 "$?"
check "... and says so" "make_graph: writing the summary to stdout failed: No space left on device" \
  "$(tail -1 "$WORK/stderr")"
check "then the record is a regular file" yes "$([ -f "$WORK/g/make_graph.json" ] && echo yes || echo no)"
leftovers="$(find "$WORK/g" -name '.*' -type f)"
check "no temporary files" "" "$leftovers"

# Sizes whose arrays overflow: an error at once, naming them; nothing written.
"$MAKE_GRAPH" --out "$WORK/huge" --nodes 4611686018427387905 --edges 10 2>"$WORK/stderr"
check "huge --nodes exit status" 1 "$?"
grep -q "num_nodes=4611686018427387905, num_edges=10: the graph's byte count overflows int64" "$WORK/stderr" ||
  { echo "FAIL: huge --nodes error: $(cat "$WORK/stderr")" >&2; failures=$((failures + 1)); }
check "huge --nodes wrote nothing" no "$([ -e "$WORK/huge" ] && echo yes || echo no)"

# Bad values are usage errors (exit 2) that name the flag, the value and the
# range; nothing is written. (CLI11 read --seed -1 as 2^64-1, and a seed past
# 2^64 as 2^64-1 too, so both reused that seed's graph.)
# --nodes and --edges go through IntInRange (CLI11's message, then its
# hint): CLI11 alone saturated 99999999999999999999 to 2^63-1 and read 0x10 as 16.
int64_max=9223372036854775807
for bad in "--seed -1|make_graph: --seed is '-1'; expected an integer in 0..18446744073709551615" \
           "--seed 18446744073709551616|make_graph: --seed is '18446744073709551616'; expected an integer in 0..18446744073709551615" \
           "--seed 1x|make_graph: --seed is '1x'; expected an integer in 0..18446744073709551615" \
           "--nodes 0|--nodes: expected an integer in 1..$int64_max, got '0'" \
           "--nodes 99999999999999999999|--nodes: expected an integer in 1..$int64_max, got '99999999999999999999'" \
           "--nodes 0x10|--nodes: expected an integer in 1..$int64_max, got '0x10'" \
           "--edges -5|--edges: expected an integer in 0..$int64_max, got '-5'"; do
  args="${bad%%|*}" message="${bad#*|}"
  # shellcheck disable=SC2086
  "$MAKE_GRAPH" --out "$WORK/bad" $args 2>"$WORK/stderr" >/dev/null
  check "$args: exit status" 2 "$?"
  check "$args: message" "$message" "$(head -1 "$WORK/stderr")"
  check "$args: wrote nothing" no "$([ -e "$WORK/bad" ] && echo yes || echo no)"
done

finish make_graph_test
