#!/usr/bin/env bash
# Tests bench/device_report.py (device_bench's rows and the device goals) on
# fixed inputs: ms and the ratio to the CPU sampler are read from the kept
# rows, a goal is met or not on cuda and never judged on simcuda, the time
# a kept row waits says who sets its pace (judged on cuda alone), and a
# missing or failed row, or an unreadable file, is said with its exit status.
set -uo pipefail
REPORT="$1"
source "$(dirname "$0")/check_lib.sh"

cat >"$WORK/bench.json" <<'JSON'
{"context": {"num_cpus": 16},
 "benchmarks": [
  {"name": "BM_SampleMultiLayer/where:0/weighted:0/workspace:1/kept:1/min_time:2.000/real_time", "real_time": 0.4,
   "time_unit": "ms", "edges_per_s": 400e6, "host_waits_per_minibatch": 4, "host_wait_ms_per_minibatch": 0.3,
   "bytes_to_host_per_minibatch": 48,
   "launches_per_minibatch": 27, "device_alloc_calls_per_minibatch": 0,
   "label": "graph in device memory, one workspace, layers kept on the device"},
  {"name": "BM_SampleMultiLayer/where:0/weighted:0/workspace:2/kept:1/min_time:2.000/real_time", "real_time": 0.7,
   "time_unit": "ms", "edges_per_s": 230e6, "host_waits_per_minibatch": 4, "bytes_to_host_per_minibatch": 48,
   "launches_per_minibatch": 27, "device_alloc_calls_per_minibatch": 0,
   "label": "graph in device memory, one workspace waiting for every hop's counts, layers kept on the device"},
  {"name": "BM_SampleMultiLayer/where:2/weighted:0/workspace:0/kept:0/min_time:2.000/real_time", "real_time": 3.5,
   "time_unit": "ms", "edges_per_s": 50e6, "label": "CPU sampler, 16 threads"},
  {"name": "BM_SampleMultiLayer/where:0/weighted:1/workspace:1/kept:1/min_time:2.000/real_time", "real_time": 1500,
   "time_unit": "us", "edges_per_s": 120e6, "host_waits_per_minibatch": 4, "host_wait_ms_per_minibatch": 0.5,
   "bytes_to_host_per_minibatch": 72,
   "launches_per_minibatch": 30, "device_alloc_calls_per_minibatch": 0,
   "label": "graph in device memory, one workspace, layers kept on the device"},
  {"name": "BM_SampleMultiLayer/where:2/weighted:1/workspace:0/kept:0/min_time:2.000/real_time", "real_time": 20,
   "time_unit": "ms", "edges_per_s": 10e6, "label": "CPU sampler, 16 threads"},
  {"name": "BM_DeviceMiniBatch/weighted:0/min_time:2.000/real_time", "real_time": 0.6, "time_unit": "ms",
   "edges_per_s": 300e6, "host_waits_per_minibatch": 5, "feature_rows_per_minibatch": 83500},
  {"name": "BM_Gather/pinned:0/into:1/real_time", "real_time": 0.2, "time_unit": "ms", "bytes_per_second": 600e9},
  {"name": "BM_DeviceCopyPreallocated/real_time", "real_time": 0.1, "time_unit": "ms", "bytes_per_second": 1200e9}]}
JSON

text="$(python3 "$REPORT" "$WORK/bench.json" --runtime cuda)"
check "exit status" 0 $?
check "uniform kept row" "| uniform, graph in device memory, kept on the device | 0.400 | 400.00 M | 8.00 | 4 | 0.300 | 48 | 27 | 0 |" \
  "$(grep '^| uniform, graph in device memory, kept on the device |' <<<"$text")"
check "the row that waits for every hop follows, named" \
  "| uniform, graph in device memory, kept on the device, waiting for every hop's counts | 0.700 | 230.00 M | 4.60 | 4 | - | 48 | 27 | 0 |" \
  "$(grep -A1 '^| uniform, graph in device memory, kept on the device |' <<<"$text" | tail -1)"
check "weighted time in us, read as ms" "1.500" "$(grep '^| weighted, graph in device memory, kept' <<<"$text" | cut -d'|' -f3 | tr -d ' ')"
check "the CPU row names its threads" "| uniform, CPU sampler, 16 threads | 3.500 | 50.00 M | 1.00 | - | - | - | - | - |" \
  "$(grep '^| uniform, CPU' <<<"$text")"
check "the bound's effect" "bound: uniform, kept: 0.400 ms with hops sized by their bounds, 0.700 ms waiting for every hop: the wait takes 1.75x" \
  "$(grep '^bound: ' <<<"$text")"
check "pace: the device's waits take most of the uniform minibatch" \
  "pace: uniform, kept: 0.400 ms, 0.300 ms of it waiting for the device, 0.100 ms issuing (3.7 us a launch): the device sets the pace" \
  "$(grep '^pace: uniform' <<<"$text")"
check "pace: issuing takes most of the weighted one" \
  "pace: weighted, kept: 1.500 ms, 0.500 ms of it waiting for the device, 1.000 ms issuing (33.3 us a launch): the host sets the pace: a CUDA graph of its launches could shorten it" \
  "$(grep '^pace: weighted' <<<"$text")"
check "gather line" "gather, table in device memory, IndexSelectInto one buffer: 600.00 GB/s, 0.50 of the copy limit" \
  "$(grep '^gather' <<<"$text")"
check "uniform ms goal met" "goal: uniform, kept, graph in device memory: ms a minibatch, at most 0.5: 0.4, met" \
  "$(grep '^goal: uniform, kept' <<<"$text")"
check "weighted ms goal not met" "goal: weighted, kept, graph in device memory: ms a minibatch, at most 1: 1.5, not met" \
  "$(grep '^goal: weighted, kept' <<<"$text")"
check "weighted ratio goal met" "goal: weighted: edges/s over the CPU sampler's (16 threads), at least 5: 12, met" \
  "$(grep '^goal: weighted: edges' <<<"$text")"
check "last line" "goals_met=3/4" "$(tail -1 <<<"$text")"

json="$(python3 "$REPORT" "$WORK/bench.json" --runtime cuda --json)"
check "--json exit status" 0 $?
check "--json bound" "[1.75]" "$(python3 -c 'import json,sys
print([round(b["waiting_over_bounded"], 2) for b in json.loads(sys.stdin.read())["bound"]])' <<<"$json")"
check "--json pace" "['device', 'host'] [0.1, 1.0]" "$(python3 -c 'import json,sys
d = json.loads(sys.stdin.read()); print([p["set_by"] for p in d["pace"]], [round(p["issuing_ms"], 3) for p in d["pace"]])' <<<"$json")"
check "--json goals" "[0.4, 8.0, 1.5, 12.0] [True, True, False, True]" "$(python3 -c 'import json,sys
d = json.loads(sys.stdin.read()); print([g["value"] for g in d["goals"]], [g["met"] for g in d["goals"]])' <<<"$json")"

text="$(python3 "$REPORT" "$WORK/bench.json" --runtime simcuda)"
check "simcuda: exit status" 0 $?
check "simcuda: said" "device_bench on simcuda: counts only, the times are the host's" "$(head -1 <<<"$text")"
check "simcuda: goals not judged" "goals_met=not judged" "$(tail -1 <<<"$text")"
check "simcuda: pace not judged" \
  "pace: uniform, kept: 0.400 ms, 0.300 ms of it waiting for the device, 0.100 ms issuing (3.7 us a launch): not judged (simcuda runs a kernel at its launch)" \
  "$(grep '^pace: uniform' <<<"$text")"

# A goal's row missing, or failed (SkipWithError): named, exit 1.
python3 - "$WORK/bench.json" "$WORK/missing.json" "$WORK/failed.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["benchmarks"]
json.dump(dict(d, benchmarks=[r for r in rows if "where:2/weighted:1" not in r["name"]]), open(sys.argv[2], "w"))
rows[0] = {"name": rows[0]["name"], "error_occurred": True, "error_message": "no usable cuda device"}
json.dump(d, open(sys.argv[3], "w"))
PY
python3 "$REPORT" "$WORK/missing.json" --runtime cuda >/dev/null 2>"$WORK/err"
check "missing row: exit status" 1 $?
check "missing row: said" "device_bench has no weighted CPU sampler row" "$(cat "$WORK/err")"
python3 "$REPORT" "$WORK/failed.json" --runtime cuda >/dev/null 2>"$WORK/err"
check "failed row: exit status" 1 $?
check "failed row: said" "device_bench row BM_SampleMultiLayer/where:0/weighted:0/workspace:1/kept:1/min_time:2.000/real_time failed: no usable cuda device
device_bench has no uniform kept row" "$(cat "$WORK/err")"

# Bad usage and unreadable input: exit 2.
python3 "$REPORT" "$WORK/bench.json" >/dev/null 2>&1
check "no --runtime: exit status" 2 $?
echo "not json" >"$WORK/garbled.json"
python3 "$REPORT" "$WORK/garbled.json" --runtime cuda >/dev/null 2>"$WORK/err"
check "garbled file: exit status" 2 $?
check "garbled file: said" "device_report: cannot read" "$(cut -c1-26 "$WORK/err")"
python3 "$REPORT" --help >"$WORK/help"
check "--help: exit status" 0 $?

finish device_report_test
