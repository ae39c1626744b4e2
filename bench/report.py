#!/usr/bin/env python3
"""Prints the sampler/gather comparison table from pipeline_bench's JSON and
the GraphBolt peer's JSON lines; the last line is sampler_vs_graphbolt=<ratio>
(the smallest of the per-configuration ratios: the claim that holds for all).
With --json it prints the same as one JSON object instead.

usage: report.py OURS_JSON PEER_JSONL [--plot PNG] [--peer-error TEXT] [--json]

Exit status (bench/compare_graphbolt's): 0 when our benchmarks are all there,
with or without the peer (a peer line that is not a result counts as a peer
error, and the rest is still shown); 1 when one of ours failed or is missing,
or --plot could not write its PNG (e.g. no matplotlib) though the peer ran.
"""
import argparse
import json
import os
import sys


def ours_by_config(path):
    with open(path) as f:
        data = json.load(f)
    sampler, limit, gather, memcpy, errors = {}, {}, None, None, []
    table = {}
    for b in data.get("benchmarks", []):
        name = b["name"]
        if b.get("run_type") == "aggregate":  # mean/median/stddev rows of --benchmark_repetitions
            continue
        if b.get("error_occurred"):
            errors.append(f"our benchmark {name} failed: {b.get('error_message')}")
            print(errors[-1], file=sys.stderr)
            continue
        if name.startswith("BM_SamplerOfLimit/"):
            parts = dict(p.split(":") for p in name.split("/")[1:] if ":" in p)
            key = (int(parts["threads"]), parts["weighted"] == "1")
            sampler[key] = b["edges_per_s"]
            limit[key] = (b["of_limit"], b["reads_per_s"])
        elif name.startswith("BM_GatherRows"):
            gather = b["bytes_per_second"]
        elif name.startswith("BM_MemcpySameBytes"):
            memcpy = b["bytes_per_second"]
        elif name.startswith("BM_WeightTable/"):
            seconds = b["real_time"] / 1e3  # the benchmark reports milliseconds
            table["build_s" if "build_only:1" in name else "load_s"] = seconds
            table["bytes_per_edge"] = b.get("table_bytes_per_edge")
            table["bytes_per_node"] = b.get("table_bytes_per_node")
    if not sampler:
        errors.append("no sampler benchmark in " + path)
    return data.get("context", {}), sampler, limit, gather, memcpy, table or None, errors


def peer_by_config(path):
    """Returns ({(threads, weighted): result}, [problems]): a line that is not
    a result (a warning printed to stdout, a cut-off line) is a problem of the
    peer's, not a reason to lose our own table."""
    peer, problems = {}, []
    try:
        with open(path) as f:
            for number, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    r = json.loads(line)
                    peer[(int(r["threads"]), bool(r["weighted"]))] = r
                except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
                    problems.append(f"{os.path.basename(path)} line {number} is not a peer result "
                                    f"({e.__class__.__name__}: {e}): {line[:80]!r}")
                    print(problems[-1], file=sys.stderr)
    except FileNotFoundError:
        pass
    return peer, problems


def shown(value, form):
    """value formatted with `form`, or "-" when there is none."""
    return "-" if value is None else format(value, form)


def rows(sampler, limit, peer):
    """One dict per configuration that either side measured."""
    out = []
    for (threads, weighted) in sorted(set(sampler) | set(peer)):
        edges = sampler.get((threads, weighted))
        of_limit, reads = limit.get((threads, weighted), (None, None))
        p = peer.get((threads, weighted))
        peer_edges = p["edges_per_s"] if p else None
        ratio = edges / peer_edges if edges is not None and peer_edges else None
        out.append({"sampler": "weighted" if weighted else "uniform", "threads": threads,
                    "ours_edges_per_s": edges, "graphbolt_edges_per_s": peer_edges, "ratio": ratio,
                    "of_limit": of_limit, "limit_reads_per_s": reads})
    return out


def print_json(context, table, gather, memcpy, weight_table, versions, peer_error, errors):
    ratios = [r["ratio"] for r in table if r["ratio"] is not None]
    print(json.dumps({
        "machine": {"num_cpus": context.get("num_cpus"), "mhz_per_cpu": context.get("mhz_per_cpu")},
        "peer": {"dgl_version": versions.get("dgl_version"), "torch_version": versions.get("torch_version"),
                 "error": peer_error or None},
        "workload": {"fanouts": [15, 10, 5], "batch_size": 1024, "replace": False},
        "configs": table,
        "gather_bytes_per_s": gather, "memcpy_bytes_per_s": memcpy,
        "gather_vs_memcpy": gather / memcpy if gather and memcpy else None,
        "weight_table": weight_table,
        "configs_with_both_sides": len(ratios),
        "errors": errors,
        "sampler_vs_graphbolt": min(ratios) if ratios else None,
    }, indent=2))


def plot(path, sampler, peer, out):
    """Writes the sampler curves of both sides to the PNG at `path`; returns
    None, or why it could not."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(6, 4))
        for weighted in (False, True):
            label = "weighted" if weighted else "uniform"
            ts = sorted(t for (t, w) in sampler if w == weighted)
            ax.plot(ts, [sampler[(t, weighted)] / 1e6 for t in ts], marker="o", label=f"faultline {label}")
            ts = sorted(t for (t, w) in peer if w == weighted)
            ax.plot(ts, [peer[(t, weighted)]["edges_per_s"] / 1e6 for t in ts], marker="s", linestyle="--",
                    label=f"GraphBolt {label}")
        ax.set_xlabel("threads")
        ax.set_ylabel("sampled edges / s (millions)")
        ax.set_xticks(sorted({t for (t, _) in sampler}))
        ax.set_title("sample_neighbors, fanouts [15,10,5], batch 1024")
        ax.legend()
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        print(f"plot: {path}", file=out)
        return None
    except ImportError as e:
        why = f"no plot written to {path}: matplotlib is not installed in the peer's environment ({e})"
    except (OSError, ValueError) as e:
        why = f"no plot written to {path}: {e}"
    print(why, file=sys.stderr)
    return why


def main():
    ap = argparse.ArgumentParser(description="faultline vs GraphBolt sampler table")
    ap.add_argument("ours", help="pipeline_bench --benchmark_out JSON")
    ap.add_argument("peer", help="graphbolt_sample.py --json lines")
    ap.add_argument("--plot", help="write a PNG plot here (needs matplotlib)")
    ap.add_argument("--peer-error", default="", help="why the peer did not run, if it did not")
    ap.add_argument("--json", action="store_true", help="one JSON object instead of the table")
    args = ap.parse_args()
    context, sampler, limit, gather, memcpy, weight_table, errors = ours_by_config(args.ours)
    peer, peer_problems = peer_by_config(args.peer)
    peer_error = "; ".join(e for e in [args.peer_error] + peer_problems if e)
    versions = next(iter(peer.values()), {})
    if args.plot and peer:
        # Asked for and possible: a missing PNG is a failure, not a note.
        why = plot(args.plot, sampler, peer, sys.stderr if args.json else sys.stdout)
        if why:
            errors.append(why)
    elif args.plot:
        print(f"no plot written to {args.plot}: the peer did not run", file=sys.stderr)
    status = 1 if errors else 0  # our side must have run; the peer may be missing
    if args.json:
        print_json(context, rows(sampler, limit, peer), gather, memcpy, weight_table, versions, peer_error, errors)
        return status
    print(f"machine: {context.get('num_cpus', '?')} CPUs at {context.get('mhz_per_cpu', '?')} MHz; "
          f"peer: DGL {versions.get('dgl_version', '-')} GraphBolt, torch {versions.get('torch_version', '-')}")
    print("fanouts [15, 10, 5], batch 1024, without replacement")
    print(f"{'sampler':<10} {'threads':>7} {'ours edges/s':>13} {'gb edges/s':>11} {'ratio':>6} "
          f"{'of limit':>8} {'limit reads/s':>14}")
    table = rows(sampler, limit, peer)
    ratios = [r["ratio"] for r in table if r["ratio"] is not None]
    for r in table:
        print(f"{r['sampler']:<10} {r['threads']:>7} {shown(r['ours_edges_per_s'], '.0f'):>13} "
              f"{shown(r['graphbolt_edges_per_s'], '.0f'):>11} {shown(r['ratio'], '.2f'):>6} "
              f"{shown(r['of_limit'], '.0%'):>8} {shown(r['limit_reads_per_s'], '.0f'):>14}")
    print("of limit: the median over pairs of a sampling window and as many random 8-byte reads over the graph's "
          "indices as it sampled edges, with as many threads, timed back to back (sampled edges/s / those "
          "reads/s); limit reads/s: over all the pairs' reads")
    if gather and memcpy:
        print(f"gather 128 x float32 random rows: {gather / 1e9:.2f} GB/s; memcpy of the same bytes: "
              f"{memcpy / 1e9:.2f} GB/s; gather/memcpy = {gather / memcpy:.2f}")
    if weight_table and "build_s" in weight_table and "load_s" in weight_table:
        print(f"weight table: {weight_table['bytes_per_edge']:.0f} bytes per edge and "
              f"{weight_table['bytes_per_node']:.0f} per node, built in {weight_table['build_s']:.2f} s; "
              f"loading the graph (table included) takes {weight_table['load_s']:.2f} s")
    if peer_error:
        print(f"GraphBolt peer {'error' if peer else 'not run'}: {peer_error}")
    if not ratios:
        print("sampler_vs_graphbolt=unavailable")
        return status
    if len(ratios) < len(table):
        print(f"only {len(ratios)} of {len(table)} configurations have both sides: the ratio below is over those")
    print(f"sampler_vs_graphbolt={min(ratios):.2f}")
    return status


if __name__ == "__main__":
    sys.exit(main())
