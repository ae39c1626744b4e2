#!/usr/bin/env python3
"""Reads device_bench's JSON (bench/device_bench.cc) and prints its rows as
docs/benchmarks.md's GPU tables take them, then the device goals:
a uniform minibatch of the workload in at most 0.5 ms and a weighted one in
at most 1 ms (sampled with the layers kept on the device, graph in device
memory), each at least 5 times the CPU sampler's edges/s in the same run;
and, where both kept rows are there, what waiting for every hop's counts
costs against hops sized by their bounds (the "bound:" lines); and who sets
the pace of the kept rows (the "pace:" lines): the device when most of the
time goes to the host's waits, else the host issuing its launches, which
capturing them in a CUDA graph could shorten.
With --json it prints the same as one JSON object instead.

usage: device_report.py DEVICE_BENCH_JSON --runtime {cuda,simcuda} [--json]

On simcuda the kernels run on the host: the rows' waits, bytes, launches and
allocation calls are a GPU run's, their times are not, and the goals are
not judged.

Exit status: 0 when every row the goals need is there and none failed (met
or not: the goals are a finding, not an error); 1 when one is missing or
reported an error (named on stderr); 2 bad usage or an unreadable file.
"""
import argparse
import json
import re
import sys

GOAL_MS = {False: 0.5, True: 1.0}  # uniform, weighted: ms per minibatch at most
GOAL_TIMES_CPU = 5.0
PER_MINIBATCH = ("host_waits_per_minibatch", "host_wait_ms_per_minibatch", "bytes_to_host_per_minibatch",
                 "launches_per_minibatch", "device_alloc_calls_per_minibatch")
TO_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


def args_of(name):
    """'BM_X/where:0/weighted:1/real_time' -> ('BM_X', {'where': 0, 'weighted': 1})."""
    parts = name.split("/")
    return parts[0], {k: int(v) for k, v in (p.split(":") for p in parts[1:] if re.fullmatch(r"\w+:\d+", p))}


def sampler_row_name(a):
    where = {0: "graph in device memory", 1: "graph pinned (UVA)"}.get(a["where"])
    if where is None:
        return "CPU sampler"
    how = "kept on the device" if a["kept"] else ("read back, one workspace" if a["workspace"] else
                                                  "read back, buffers per call")
    return f"{where}, {how}" + (", waiting for every hop's counts" if a["workspace"] == 2 else "")


def load_rows(path):
    """Returns (sampler rows, minibatch rows, gather rows, copy rows, errors)."""
    with open(path) as f:
        data = json.load(f)
    sampler, minibatch, gather, copy, errors = {}, {}, {}, {}, []
    for b in data.get("benchmarks", []):
        if b.get("run_type") == "aggregate":
            continue
        name = b["name"]
        if b.get("error_occurred"):
            errors.append(f"device_bench row {name} failed: {b.get('error_message')}")
            continue
        base, a = args_of(name)
        ms = b.get("real_time", 0.0) * TO_MS.get(b.get("time_unit", "ns"), 1e-6)
        counts = {k: b[k] for k in PER_MINIBATCH if k in b}
        if base == "BM_SampleMultiLayer":
            threads = re.search(r"(\d+) threads", b.get("label", ""))
            sampler[(a["weighted"], a["where"], a["workspace"], a["kept"])] = {
                "row": sampler_row_name(a), "weighted": bool(a["weighted"]), "ms": ms,
                "edges_per_s": b.get("edges_per_s"), "threads": int(threads.group(1)) if threads else None, **counts}
        elif base == "BM_DeviceMiniBatch":
            minibatch[a["weighted"]] = {"row": "whole minibatch: kept, then the features gathered",
                                        "weighted": bool(a["weighted"]), "ms": ms, "edges_per_s": b.get("edges_per_s"),
                                        "feature_rows": b.get("feature_rows_per_minibatch"), **counts}
        elif base == "BM_Gather":
            gather[(a["pinned"], a["into"])] = b.get("bytes_per_second")
        elif base.startswith("BM_DeviceCopy"):
            copy[base] = b.get("bytes_per_second")
    return sampler, minibatch, gather, copy, errors


def judge(sampler, runtime, errors):
    """The four goals; each with its value and whether it is met (None: not judged)."""
    goals = []
    for weighted in (False, True):
        kind = "weighted" if weighted else "uniform"
        kept = sampler.get((int(weighted), 0, 1, 1))
        cpu = sampler.get((int(weighted), 2, 0, 0))
        if kept is None or cpu is None:
            errors.append(f"device_bench has no {kind} {'kept' if kept is None else 'CPU sampler'} row")
            continue
        ratio = kept["edges_per_s"] / cpu["edges_per_s"] if cpu["edges_per_s"] else None
        limit_ms = GOAL_MS[weighted]
        for goal, value, limit, met in (
                (f"{kind}, kept, graph in device memory: ms a minibatch, at most", kept["ms"], limit_ms,
                 kept["ms"] <= limit_ms),
                (f"{kind}: edges/s over the CPU sampler's ({cpu['threads']} threads), at least", ratio,
                 GOAL_TIMES_CPU, ratio is not None and ratio >= GOAL_TIMES_CPU)):
            goals.append({"goal": goal, "value": value, "limit": limit, "met": met if runtime == "cuda" else None})
    return goals


def bound_effect(sampler):
    """Per kind, the kept row sized by the bounds against the one that waits for every hop (graph in device memory):
    whether queuing bounded hops without a wait pays on this device."""
    effects = []
    for weighted in (0, 1):
        bounded, waiting = sampler.get((weighted, 0, 1, 1)), sampler.get((weighted, 0, 2, 1))
        if bounded and waiting and bounded["ms"]:
            effects.append({"kind": "weighted" if weighted else "uniform", "bounded_ms": bounded["ms"],
                            "waiting_ms": waiting["ms"], "waiting_over_bounded": waiting["ms"] / bounded["ms"]})
    return effects


def pace(sampler):
    """Per kind, the kept row (graph in device memory, one workspace) split into the host's waits and the rest,
    issuing its launches: whoever takes more of the time sets the pace."""
    paces = []
    for weighted in (0, 1):
        kept = sampler.get((weighted, 0, 1, 1))
        if not kept or kept.get("host_wait_ms_per_minibatch") is None or not kept.get("launches_per_minibatch"):
            continue
        waiting = kept["host_wait_ms_per_minibatch"]
        issuing = max(kept["ms"] - waiting, 0.0)
        paces.append({"kind": "weighted" if weighted else "uniform", "ms": kept["ms"], "waiting_ms": waiting,
                      "issuing_ms": issuing, "issuing_us_per_launch": issuing * 1e3 / kept["launches_per_minibatch"],
                      "set_by": "device" if waiting >= issuing else "host"})
    return paces


def ms_text(ms):
    return f"{ms:.3f}" if ms < 10 else f"{ms:.1f}"


def count_text(value):
    if value is None:
        return "-"
    if value >= 1e6:
        return f"{value / 1e6:.2f} M"
    return f"{value:,.0f}" if value == int(value) else f"{value:,.1f}"


def ratio_text(value):
    return "-" if value is None else f"{value:.2f}"


def sampler_order(key):
    weighted, where, workspace, kept = key
    return (weighted, where, -kept, {1: 0, 2: 1, 0: 2}[workspace])


def print_text(runtime, sampler, minibatch, gather, copy, goals):
    print(f"device_bench on {runtime}" + ("" if runtime == "cuda" else ": counts only, the times are the host's"))
    print()
    print("| row | ms a minibatch | edges/s | x CPU | waits | ms waiting | bytes to host | launches | alloc calls |")
    print("|---|---|---|---|---|---|---|---|---|")
    for weighted in (0, 1):
        cpu = sampler.get((weighted, 2, 0, 0))
        rows = [sampler[k] for k in sorted(sampler, key=sampler_order) if k[0] == weighted]
        rows += [minibatch[weighted]] if weighted in minibatch else []
        for r in rows:
            ratio = r["edges_per_s"] / cpu["edges_per_s"] if cpu and cpu["edges_per_s"] else None
            name = r["row"] + (f", {r['threads']} threads" if r.get("threads") else "")
            print(f"| {'weighted' if weighted else 'uniform'}, {name} | {ms_text(r['ms'])} | "
                  f"{count_text(r['edges_per_s'])} | {ratio_text(ratio)} | "
                  f"{count_text(r.get('host_waits_per_minibatch'))} | "
                  f"{'-' if r.get('host_wait_ms_per_minibatch') is None else ms_text(r['host_wait_ms_per_minibatch'])} | "
                  f"{count_text(r.get('bytes_to_host_per_minibatch'))} | {count_text(r.get('launches_per_minibatch'))} | "
                  f"{count_text(r.get('device_alloc_calls_per_minibatch'))} |")
    limit = copy.get("BM_DeviceCopyPreallocated")
    if gather:
        print()
        for (pinned, into), rate in sorted(gather.items()):
            print(f"gather, table {'pinned (UVA)' if pinned else 'in device memory'}, "
                  f"{'IndexSelectInto one buffer' if into else 'IndexSelect'}: {rate / 1e9:.2f} GB/s"
                  + (f", {rate / limit:.2f} of the copy limit" if limit else ""))
        if limit:
            print(f"copy limit (cudaMemcpy device to device, output allocated once): {limit / 1e9:.2f} GB/s")
    effects = bound_effect(sampler)
    if effects:
        print()
    for e in effects:
        print(f"bound: {e['kind']}, kept: {ms_text(e['bounded_ms'])} ms with hops sized by their bounds, "
              f"{ms_text(e['waiting_ms'])} ms waiting for every hop: the wait takes {e['waiting_over_bounded']:.2f}x"
              + ("" if runtime == "cuda" else " (host times)"))
    for p in pace(sampler):
        setter = ("the device sets the pace" if p["set_by"] == "device" else
                  "the host sets the pace: a CUDA graph of its launches could shorten it")
        print(f"pace: {p['kind']}, kept: {ms_text(p['ms'])} ms, {ms_text(p['waiting_ms'])} ms of it waiting for the "
              f"device, {ms_text(p['issuing_ms'])} ms issuing ({p['issuing_us_per_launch']:.1f} us a launch): "
              + (setter if runtime == "cuda" else "not judged (simcuda runs a kernel at its launch)"))
    print()
    for g in goals:
        verdict = {True: "met", False: "not met", None: "not judged"}[g["met"]]
        value = "-" if g["value"] is None else f"{g['value']:.3g}"
        print(f"goal: {g['goal']} {g['limit']:g}: {value}, {verdict}")
    judged = [g for g in goals if g["met"] is not None]
    print(f"goals_met={sum(g['met'] for g in judged)}/{len(judged)}" if judged else "goals_met=not judged")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("device_bench_json")
    parser.add_argument("--runtime", required=True, choices=("cuda", "simcuda"),
                        help="the runtime device_bench ran on (FAULTLINE_RUNTIME)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the tables")
    args = parser.parse_args()
    try:
        sampler, minibatch, gather, copy, errors = load_rows(args.device_bench_json)
    except (OSError, ValueError, KeyError) as e:
        print(f"device_report: cannot read {args.device_bench_json}: {e}", file=sys.stderr)
        return 2
    goals = judge(sampler, args.runtime, errors)
    if args.json:
        print(json.dumps({"runtime": args.runtime, "sampler": list(sampler.values()),
                          "minibatch": list(minibatch.values()),
                          "gather_bytes_per_s": {f"pinned:{p}/into:{i}": r for (p, i), r in gather.items()},
                          "copy_bytes_per_s": copy, "bound": bound_effect(sampler), "pace": pace(sampler), "goals": goals,
                          "errors": errors}))
    else:
        print_text(args.runtime, sampler, minibatch, gather, copy, goals)
    for e in errors:
        print(e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
