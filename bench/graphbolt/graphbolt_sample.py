#!/usr/bin/env python3
"""Times DGL GraphBolt's CPU multi-layer neighbor sampling on a CSC graph.

The graph directory holds indptr.npy (int64, num_nodes + 1), indices.npy
(int64 or int32) and optionally weights.npy (float32, one per edge); the
in-neighbors of node v are indices[indptr[v]:indptr[v + 1]].

Each minibatch does what GraphBolt's NeighborSampler (deduplicate=True) does
per layer: FusedCSCSamplingGraph.sample_neighbors(nodes, fanout, replace,
probs_name), then unique_and_compact_csc_formats(sampled_csc, nodes), whose
unique nodes (seeds first) are the next layer's nodes. Only that loop is timed.

By default fanouts[0] is used for the hop from the seeds (the order the
faultline sampler uses); --fanout-order graphbolt uses NeighborSampler's own
order, which walks the list reversed (fanouts[-1] at the seeds).

Run it with the venv's python from setup_venv.sh.
"""

import argparse
import json
import os
import sys
import time


def fail(msg):
    print(f"graphbolt_sample.py: error: {msg}", file=sys.stderr)
    sys.exit(2)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--graph-dir", required=True, help="directory with indptr.npy, indices.npy[, weights.npy]")
    p.add_argument("--fanouts", default="15,10,5", help="comma-separated fanouts, e.g. 15,10,5")
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads value")
    p.add_argument("--weighted", action="store_true", help="sample with probs_name='weights' (needs weights.npy)")
    p.add_argument("--replace", action="store_true", help="sample with replacement (default: without)")
    p.add_argument("--batches", type=int, default=50, help="timed minibatches")
    p.add_argument("--warmup", type=int, default=5, help="untimed minibatches run first")
    p.add_argument("--seed", type=int, default=0, help="seed for the seed-node batches and GraphBolt's RNG")
    p.add_argument("--fanout-order", choices=["seeds-first", "graphbolt"], default="seeds-first",
                   help="seeds-first: fanouts[0] at the seeds (default); graphbolt: reversed, like NeighborSampler")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    a = p.parse_args(argv)
    try:
        a.fanout_list = [int(x) for x in a.fanouts.split(",") if x.strip() != ""]
    except ValueError:
        fail(f"--fanouts must be comma-separated integers, got {a.fanouts!r}")
    if not a.fanout_list:
        fail("--fanouts is empty")
    if any(f < 0 and f != -1 for f in a.fanout_list):
        fail(f"--fanouts values must be >= 0 or -1, got {a.fanouts!r}")
    for name in ("batch_size", "threads", "batches"):
        if getattr(a, name) < 1:
            fail(f"--{name.replace('_', '-')} must be >= 1")
    if a.warmup < 0:
        fail("--warmup must be >= 0")
    return a


def load_graph(np, graph_dir, weighted):
    if not os.path.isdir(graph_dir):
        fail(f"graph dir {graph_dir!r} does not exist or is not a directory")

    def load(name, required=True, why=""):
        path = os.path.join(graph_dir, name)
        if not os.path.isfile(path):
            if required:
                fail(f"missing {path}{why}")
            return None
        try:
            arr = np.load(path, allow_pickle=False)
        except Exception as e:  # noqa: BLE001 - report any unreadable file the same way
            fail(f"cannot read {path}: {e}")
        if arr.ndim != 1:
            fail(f"{path} must be 1-D, got shape {arr.shape}")
        return arr

    indptr = load("indptr.npy")
    indices = load("indices.npy")
    weights = load("weights.npy", required=weighted, why=" (--weighted needs it)")
    if indptr.dtype != np.int64:
        fail(f"indptr.npy must be int64, got {indptr.dtype}")
    if indices.dtype not in (np.int64, np.int32):
        fail(f"indices.npy must be int64 or int32, got {indices.dtype}")
    if indptr.size < 2:
        fail(f"indptr.npy needs num_nodes + 1 >= 2 entries, got {indptr.size}")
    num_nodes = indptr.size - 1
    num_edges = indices.size
    if indptr[0] != 0 or indptr[-1] != num_edges:
        fail(f"indptr.npy must start at 0 and end at len(indices)={num_edges}, got {indptr[0]}..{indptr[-1]}")
    if np.any(indptr[1:] < indptr[:-1]):
        fail("indptr.npy is not non-decreasing")
    if num_edges and (indices.min() < 0 or indices.max() >= num_nodes):
        fail(f"indices.npy has ids outside [0, {num_nodes})")
    if weights is not None:
        if not weighted:
            weights = None  # not needed: don't attach it
        elif weights.dtype != np.float32:
            fail(f"weights.npy must be float32, got {weights.dtype}")
        elif weights.size != num_edges:
            fail(f"weights.npy has {weights.size} entries, expected one per edge ({num_edges})")
    return indptr, indices, weights


def seed_batches(np, num_nodes, batch_size, count, seed, dtype):
    """`count` batches of distinct node ids, consecutive slices of shuffled
    epochs (like ItemSampler(shuffle=True)); same ids for the same seed."""
    rng = np.random.default_rng(seed)
    size = min(batch_size, num_nodes)
    perm, pos, out = rng.permutation(num_nodes), 0, []
    for _ in range(count):
        if pos + size > num_nodes:
            perm, pos = rng.permutation(num_nodes), 0
        out.append(np.ascontiguousarray(perm[pos:pos + size], dtype=dtype))
        pos += size
    return out


def main(argv):
    args = parse_args(argv)
    os.environ.setdefault("DGLBACKEND", "pytorch")
    try:
        import numpy as np
        import torch
        import dgl
        import dgl.graphbolt as gb
    except Exception as e:  # noqa: BLE001
        fail(f"cannot import dgl.graphbolt ({type(e).__name__}: {e}); run bench/graphbolt/setup_venv.sh and use its python")

    indptr_np, indices_np, weights_np = load_graph(np, args.graph_dir, args.weighted)
    num_nodes, num_edges = indptr_np.size - 1, indices_np.size

    torch.set_num_threads(args.threads)
    gb.seed(args.seed)
    indptr = torch.from_numpy(indptr_np)  # shares memory with the numpy arrays
    indices = torch.from_numpy(indices_np)
    edge_attributes = None
    if args.weighted:
        edge_attributes = {"weights": torch.from_numpy(weights_np)}
    graph = gb.fused_csc_sampling_graph(indptr, indices, edge_attributes=edge_attributes)
    probs_name = "weights" if args.weighted else None

    order = args.fanout_list if args.fanout_order == "seeds-first" else list(reversed(args.fanout_list))
    fanout_tensors = [torch.LongTensor([f]) for f in order]
    total = args.warmup + args.batches
    batches = [torch.from_numpy(b) for b in
               seed_batches(np, num_nodes, args.batch_size, total, args.seed, indices_np.dtype)]
    batch_size = int(batches[0].numel())

    def run_batch(seeds, layer_edges):
        nodes = seeds
        for layer, fanout in enumerate(fanout_tensors):
            sub = graph.sample_neighbors(nodes, fanout, replace=args.replace, probs_name=probs_name)
            csc = sub.sampled_csc
            layer_edges[layer] += csc.indices.numel()
            nodes, _ = gb.unique_and_compact_csc_formats(csc, nodes)
        return nodes

    warm_edges = [0] * len(order)
    for b in batches[:args.warmup]:
        run_batch(b, warm_edges)

    layer_edges = [0] * len(order)
    timed = batches[args.warmup:]
    start = time.perf_counter()
    for b in timed:
        run_batch(b, layer_edges)
    seconds = time.perf_counter() - start

    sampled = sum(layer_edges)
    result = {
        "peer": "graphbolt",
        "dgl_version": dgl.__version__,
        "torch_version": torch.__version__,
        "threads": args.threads,
        "weighted": args.weighted,
        "fanouts": args.fanout_list,
        "fanout_order": args.fanout_order,
        "replace": args.replace,
        "batch_size": batch_size,
        "batches": args.batches,
        "warmup": args.warmup,
        "seed": args.seed,
        "num_nodes": num_nodes,
        "num_edges": num_edges,
        "indices_dtype": str(indices_np.dtype),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "seconds": seconds,
        "seeds_per_s": batch_size * args.batches / seconds,
        "edges_per_s": sampled / seconds,
        "sampled_edges": sampled,
        "sampled_edges_per_layer": layer_edges,
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(f"graphbolt dgl={result['dgl_version']} torch={result['torch_version']} threads={args.threads} "
              f"{'weighted' if args.weighted else 'uniform'} fanouts={args.fanouts} ({args.fanout_order}) "
              f"batch={batch_size} batches={args.batches}: {seconds:.3f} s, "
              f"{result['seeds_per_s']:.0f} seeds/s, {result['edges_per_s']:.3e} edges/s, "
              f"{sampled} edges (per layer {layer_edges})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
