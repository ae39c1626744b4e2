#!/usr/bin/env bash
# Tests bench/report.py (compare_graphbolt's table) on fixed inputs: the
# ratio is ours / GraphBolt's edges/s, the last line is the smallest ratio,
# --json carries the same numbers, a missing or garbled peer is said, not
# hidden, and a --plot that cannot be written fails the run.
set -uo pipefail
REPORT="$1"
source "$(dirname "$0")/check_lib.sh"

cat >"$WORK/ours.json" <<'JSON'
{"context": {"num_cpus": 2, "mhz_per_cpu": 2596},
 "benchmarks": [
  {"name": "BM_SamplerOfLimit/weighted:0/threads:1/real_time", "edges_per_s": 40e6, "of_limit": 0.5, "reads_per_s": 80e6},
  {"name": "BM_SamplerOfLimit/weighted:1/threads:1/real_time", "edges_per_s": 1e6, "of_limit": 0.02, "reads_per_s": 50e6},
  {"name": "BM_GatherRows/real_time", "bytes_per_second": 2e9},
  {"name": "BM_MemcpySameBytes/real_time", "bytes_per_second": 4e9},
  {"name": "BM_WeightTable/build_only:0/real_time", "real_time": 800.0, "table_bytes_per_edge": 8, "table_bytes_per_node": 4},
  {"name": "BM_WeightTable/build_only:1/real_time", "real_time": 250.0, "table_bytes_per_edge": 8, "table_bytes_per_node": 4}]}
JSON
cat >"$WORK/peer.jsonl" <<'JSON'
{"threads": 1, "weighted": false, "edges_per_s": 8e6, "dgl_version": "2.1.0", "torch_version": "2.2.1"}
{"threads": 1, "weighted": true, "edges_per_s": 0.4e6, "dgl_version": "2.1.0", "torch_version": "2.2.1"}
JSON

text="$(python3 "$REPORT" "$WORK/ours.json" "$WORK/peer.jsonl")"
check "exit status" 0 $?
check "last line: the smallest ratio (weighted 1 / 0.4)" "sampler_vs_graphbolt=2.50" "$(tail -1 <<<"$text")"
check "uniform row" "uniform 1 40000000 8000000 5.00 50% 80000000" "$(grep '^uniform' <<<"$text" | tr -s ' ')"
check "gather line" "gather 128 x float32 random rows: 2.00 GB/s; memcpy of the same bytes: 4.00 GB/s; gather/memcpy = 0.50" \
  "$(grep '^gather' <<<"$text")"
check "weight table line" "weight table: 8 bytes per edge and 4 per node, built in 0.25 s; loading the graph (table included) takes 0.80 s" \
  "$(grep '^weight table' <<<"$text")"

json="$(python3 "$REPORT" "$WORK/ours.json" "$WORK/peer.jsonl" --json)"
check "--json exit status" 0 $?
got="$(python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); r=d["configs"]
w=d["weight_table"]
print(d["sampler_vs_graphbolt"], len(r), r[0]["sampler"], r[0]["ratio"], r[1]["of_limit"], d["gather_vs_memcpy"], d["peer"]["error"],
      w["build_s"], w["load_s"], w["bytes_per_edge"])' <<<"$json")"
check "--json fields" "2.5 2 uniform 5.0 0.02 0.5 None 0.25 0.8 8" "$got"

: >"$WORK/none.jsonl"
text="$(python3 "$REPORT" "$WORK/ours.json" "$WORK/none.jsonl" --peer-error "pip failed")"
check "no peer: said" "GraphBolt peer not run: pip failed" "$(grep '^GraphBolt peer' <<<"$text")"
check "no peer: no ratio" "sampler_vs_graphbolt=unavailable" "$(tail -1 <<<"$text")"
json="$(python3 "$REPORT" "$WORK/ours.json" "$WORK/none.jsonl" --peer-error "pip failed" --json)"
check "no peer: --json" "None pip failed" "$(python3 -c 'import json,sys; d=json.loads(sys.stdin.read())
print(d["sampler_vs_graphbolt"], d["peer"]["error"])' <<<"$json")"

# One of our benchmarks failed (SkipWithError): said, and exit 1, also with --json.
python3 - "$WORK/ours.json" "$WORK/failed.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["benchmarks"][1] = {"name": d["benchmarks"][1]["name"], "error_occurred": True, "error_message": "set FAULTLINE_BENCH_GRAPH"}
json.dump(d, open(sys.argv[2], "w"))
PY
python3 "$REPORT" "$WORK/failed.json" "$WORK/peer.jsonl" >/dev/null 2>"$WORK/err"
check "a failed benchmark: exit status" 1 $?
check "a failed benchmark: said" "our benchmark BM_SamplerOfLimit/weighted:1/threads:1/real_time failed: set FAULTLINE_BENCH_GRAPH" \
  "$(cat "$WORK/err")"
json="$(python3 "$REPORT" "$WORK/failed.json" "$WORK/peer.jsonl" --json 2>/dev/null)"
check "a failed benchmark: --json exit status" 1 $?
check "a failed benchmark: --json errors" "1 5.0" "$(python3 -c 'import json,sys; d=json.loads(sys.stdin.read())
print(len(d["errors"]), d["sampler_vs_graphbolt"])' <<<"$json")"

# A peer line that is not a result (a warning on stdout, a cut-off line): a
# peer error, said; our table and the peer's other results still shown, and
# exit 0 (the peer may fail; ours may not).
{ head -1 "$WORK/peer.jsonl"; echo 'Warning: something printed to stdout'; tail -1 "$WORK/peer.jsonl" | head -c 40; echo
} >"$WORK/bad.jsonl"
text="$(python3 "$REPORT" "$WORK/ours.json" "$WORK/bad.jsonl" 2>"$WORK/err")"
check "bad peer lines: exit status" 0 $?
check "bad peer lines: our rows" "2" "$(grep -cE '^(uniform|weighted) ' <<<"$text")"
check "bad peer lines: the good one's ratio" "sampler_vs_graphbolt=5.00" "$(tail -1 <<<"$text")"
check "bad peer lines: said" "2" "$(grep '^GraphBolt peer error: ' <<<"$text" | grep -o 'bad.jsonl line [0-9]' | sort -u | wc -l)"
check "bad peer lines: on stderr" "2" "$(grep -c 'is not a peer result' "$WORK/err")"
json="$(python3 "$REPORT" "$WORK/ours.json" "$WORK/bad.jsonl" --peer-error "one run failed" --json 2>/dev/null)"
check "bad peer lines: --json exit status" 0 $?
check "bad peer lines: --json" "2 5.0 True True" "$(python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); e=d["peer"]["error"]
print(len(d["configs"]), d["sampler_vs_graphbolt"], e.startswith("one run failed; "), "line 3" in e)' <<<"$json")"

# --plot when the peer ran but matplotlib cannot be imported (a stand-in that
# fails to import, ahead on PYTHONPATH): no PNG, so exit 1, and said.
mkdir -p "$WORK/nompl/matplotlib"
echo 'raise ImportError("stand-in: no matplotlib")' >"$WORK/nompl/matplotlib/__init__.py"
PYTHONPATH="$WORK/nompl" python3 "$REPORT" "$WORK/ours.json" "$WORK/peer.jsonl" --plot "$WORK/p.png" >"$WORK/out" 2>"$WORK/err"
check "--plot without matplotlib: exit status" 1 $?
check "--plot without matplotlib: no PNG" "no" "$([ -e "$WORK/p.png" ] && echo yes || echo no)"
check "--plot without matplotlib: the table still" "sampler_vs_graphbolt=2.50" "$(tail -1 "$WORK/out")"
check "--plot without matplotlib: said" "1" "$(grep -c "no plot written to $WORK/p.png: matplotlib is not installed" "$WORK/err")"
json="$(PYTHONPATH="$WORK/nompl" python3 "$REPORT" "$WORK/ours.json" "$WORK/peer.jsonl" --plot "$WORK/p.png" --json 2>/dev/null)"
check "--plot without matplotlib: --json exit status" 1 $?
check "--plot without matplotlib: --json errors" "1 True" "$(python3 -c 'import json,sys; d=json.loads(sys.stdin.read())
print(len(d["errors"]), d["errors"][0].startswith("no plot written"))' <<<"$json")"
# Without the peer there is nothing to plot: said, and not a failure (as before).
PYTHONPATH="$WORK/nompl" python3 "$REPORT" "$WORK/ours.json" "$WORK/none.jsonl" --plot "$WORK/p.png" >/dev/null 2>"$WORK/err"
check "--plot without the peer: exit status" 0 $?
check "--plot without the peer: said" "no plot written to $WORK/p.png: the peer did not run" "$(cat "$WORK/err")"

finish report_test
