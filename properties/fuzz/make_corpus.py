#!/usr/bin/env python3
"""Writes the seed corpus of every fuzz target into corpus/<target>/.

Run from anywhere: python3 properties/fuzz/make_corpus.py. The files are
committed; rerunning rewrites the same bytes. regress-* files are inputs
that crashed the code before a fix (docs/reliability.md "Fuzzing"), made
here by hand; crash-* files are libFuzzer's own crash inputs, copied in,
and this script leaves them alone.
"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


# --- .npy -------------------------------------------------------------------

def npy(descr, shape, payload, fortran=False, version=1):
    shape_text = "(" + "".join("%d, " % d for d in shape).rstrip(" ") + ")"
    if len(shape) > 1:
        shape_text = "(" + ", ".join(str(d) for d in shape) + ")"
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape_text)
    preamble = 10 if version == 1 else 12
    header += " " * ((64 - (preamble + len(header) + 1) % 64) % 64) + "\n"
    length = struct.pack("<H", len(header)) if version == 1 else struct.pack("<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + length + header.encode() + payload


def ints(fmt, values):
    return b"".join(struct.pack(fmt, v) for v in values)


def npy_corpus():
    t = "npy_fuzz"
    write(t, "int64_1d.npy", npy("<i8", [3], ints("<q", [0, 1, -2])))
    write(t, "int32_1d.npy", npy("<i4", [4], ints("<i", [7, -1, 2**31 - 1, 0])))
    write(t, "uint8_1d.npy", npy("|u1", [3], bytes([0, 128, 255])))
    write(t, "bool_1d.npy", npy("|b1", [2], bytes([1, 0])))
    write(t, "float32_1d.npy", npy("<f4", [2], ints("<f", [1.5, -0.0])))
    write(t, "float32_2d.npy", npy("<f4", [2, 3], ints("<f", [0, 1, 2, 3, 4, 5])))
    write(t, "scalar_0d.npy", npy("<i8", [], ints("<q", [42])))
    write(t, "empty_1d.npy", npy("<i4", [0], b""))
    write(t, "version2.npy", npy("<i8", [1], ints("<q", [5]), version=2))
    write(t, "fortran.npy", npy("<f4", [2, 1], ints("<f", [1, 2]), fortran=True))
    write(t, "big_endian.npy", npy(">i4", [1], ints(">i", [1])))
    write(t, "truncated.npy", npy("<i8", [4], ints("<q", [1, 2]))[:-3])


# --- graph folders ----------------------------------------------------------

SEP = b"\xffNEXT\xff"


def graph(indptr, indices, weights=None, edge_types=None, indices_descr="<i8", types_descr="<i4"):
    fmt = {"<i8": "<q", "<i4": "<i", "|u1": "<B"}
    parts = [npy("<i8", [len(indptr)], ints("<q", indptr)),
             npy(indices_descr, [len(indices)], ints(fmt[indices_descr], indices))]
    if weights is not None or edge_types is not None:
        parts.append(b"" if weights is None else npy("<f4", [len(weights)], ints("<f", weights)))
    if edge_types is not None:
        parts.append(npy(types_descr, [len(edge_types)], ints(fmt[types_descr], edge_types)))
    return SEP.join(parts)


def graph_corpus():
    t = "csc_graph_fuzz"
    indptr, indices = [0, 2, 3, 5], [1, 2, 0, 0, 1]
    write(t, "plain", graph(indptr, indices))
    write(t, "int32_indices", graph(indptr, indices, indices_descr="<i4"))
    write(t, "weighted", graph(indptr, indices, weights=[1, 0.5, 0, 2, 3]))
    write(t, "typed_u1", graph(indptr, indices, edge_types=[0, 1, 2, 0, 0], types_descr="|u1"))
    write(t, "weighted_typed", graph(indptr, indices, weights=[1, 1, 1, 1, 1], edge_types=[1, 3, 0, 2, 2]))
    write(t, "empty_graph", graph([0], []))
    write(t, "not_monotone", graph([0, 3, 2, 5], indices))
    write(t, "index_out_of_range", graph(indptr, [1, 2, 3, 0, 1]))
    write(t, "negative_weight", graph(indptr, indices, weights=[1, -1, 0, 2, 3]))
    write(t, "unsorted_types", graph(indptr, indices, edge_types=[1, 0, 0, 0, 0]))


# --- Status JSON and the wire -----------------------------------------------

def round_trip_seed(selector, code, line, fields):
    fields = [f if isinstance(f, bytes) else f.encode() for f in fields]
    return bytes([selector]) + struct.pack("<ii", code, line) + b"\0".join(fields)


def status_json_corpus():
    t = "status_json_fuzz"
    write(t, "plain.json", json.dumps({"code": 1, "message": "fanout is -3; expected >= -1"}))
    write(t, "cuda.json", json.dumps({"code": 6, "message": "cudaHostUnregister failed", "cuda": {
        "code": 713, "name": "cudaErrorHostMemoryNotRegistered", "string": "not registered",
        "api": "cudaHostUnregister", "file": "a.cc", "line": 12}}))
    write(t, "code_out_of_range.json", json.dumps({"code": 99, "message": "x"}))
    write(t, "no_code.json", json.dumps({"message": "x"}))
    write(t, "array.json", "[1, 2]")
    write(t, "round_trip_plain", round_trip_seed(0x03, 0, 0, ["worker failed", ""]))
    write(t, "round_trip_cuda", round_trip_seed(0x80, 3, 77, ["init failed", "cudaErrorInitializationError",
                                                              "initialization error", "cudaMalloc", "x.cc"]))
    # Each threw a json type_error out of StatusFromJson, or (the floats) was
    # an out-of-range float-to-int conversion.
    write(t, "regress-message-not-a-string.json", '{"message": 1}')
    write(t, "regress-code-not-a-number.json", '{"message": "m", "code": "1"}')
    write(t, "regress-code-float-overflow.json", '{"message": "m", "code": 1e300}')
    write(t, "regress-cuda-code-not-a-number.json", '{"message": "m", "cuda": {"code": "3"}}')
    write(t, "regress-cuda-line-float-overflow.json", '{"message": "m", "cuda": {"line": -1e300}}')
    # An error naming a Latin-1 file name: StatusToJson(...).dump() threw.
    write(t, "regress-invalid-utf8-cuda-file", round_trip_seed(0x80, 3, 1, ["m", "name", "s", "api", b"/tmp/\xe9t\xe9.npy"]))


def frame(batch, message):
    if isinstance(message, str):
        message = message.encode()
    return struct.pack("<qq", batch, len(message)) + message


def wire_corpus():
    t = "wire_fuzz"
    error = json.dumps({"code": 7, "message": "worker died", "step": "restore_state"})
    cuda = json.dumps({"code": 6, "message": "m", "step": "sample_neighbors", "cuda": {
        "code": 3, "name": "cudaErrorInitializationError", "string": "initialization error",
        "api": "cudaGetDeviceCount", "file": "f.cc", "line": 9}})
    write(t, "success", frame(0, ""))
    write(t, "error", frame(1, error))
    write(t, "cuda_error", frame(2, cuda))
    write(t, "two_answers", frame(0, "") + frame(2, error))
    write(t, "mid_answer", frame(3, error)[:30])
    write(t, "bad_length", struct.pack("<qq", 4, -1))
    write(t, "not_json", frame(5, "{oops"))
    write(t, "round_trip", round_trip_seed(0x85, 0, 0, ["message", "fetch_features"]))
    # ErrorFromWire threw on a step that is not a string; ErrorToWire threw
    # (dump) on invalid UTF-8 in the message or the step.
    write(t, "regress-step-not-a-string", frame(1, '{"code": 7, "message": "m", "step": 1}'))
    write(t, "regress-invalid-utf8-message", round_trip_seed(0x05, 0, 0, [b"cannot open '/tmp/\xe9t\xe9'",
                                                                          "restore_state"]))
    write(t, "regress-invalid-utf8-step", round_trip_seed(0x05, 0, 0, ["m", b"step\xff"]))


# --- minibatches ------------------------------------------------------------

MAGIC = 0x66617574424d3034  # faultBM04


def u64(v):
    return struct.pack("<Q", v & 0xFFFFFFFFFFFFFFFF)


def array(values, fmt="<q"):
    return u64(len(values)) + ints(fmt, values)


def encoded_layer(layer, room=0):
    """A layer (seeds, indptr, indices, edge ids, unique nodes, compacted)
    with its edges' regions `room` values longer than its edges (filled with
    what an earlier minibatch left there). Its seeds and unique nodes are
    not in it: the minibatch's nodes array holds them."""
    seeds, indptr, indices, edge_ids, unique, compacted = layer
    stale = [-7] * room
    out = u64(len(unique)) + u64(len(indices)) + u64(len(indices) + room) + ints("<q", indptr)
    for region in (edge_ids, indices, compacted):
        out += ints("<q", list(region) + stale)
    return out


def minibatch(index, seeds, layers, dim, features, room=0):
    """The layers chain: each one's seeds are the unique nodes of the one
    before (the first's are `seeds`), and its unique nodes start with them."""
    out = u64(MAGIC) + u64(index) + u64(len(seeds)) + u64(len(layers))
    nodes = seeds
    for k, layer in enumerate(layers):
        assert layer[0] == nodes and layer[4][:len(nodes)] == nodes, "the layers must chain"
        out += encoded_layer(layer, room if k == len(layers) - 1 else 0)
        nodes = layer[4]
    return out + array(nodes) + u64(dim) + array(features, "<f")


def minibatch_corpus():
    t = "minibatch_fuzz"
    layer0 = ([3, 1], [0, 2, 3], [0, 4, 3], [5, 6, 7], [3, 1, 0, 4], [2, 3, 0])
    layer1 = ([3, 1, 0, 4], [0, 1, 1, 2, 2], [1, 2], [8, 9], [3, 1, 0, 4, 2], [1, 4])
    write(t, "one_layer", minibatch(0, [3, 1], [layer0], 2, [float(i) for i in range(8)]))
    write(t, "two_layers", minibatch(5, [3, 1], [layer0, layer1], 1, [1, 2, 3, 4, 5]))
    write(t, "no_features", minibatch(1, [3, 1], [layer0], 0, []))
    write(t, "empty", minibatch(0, [], [], 0, []))
    # As a worker writes them: the last layer's regions with room for three
    # more edges than it has.
    write(t, "room", minibatch(5, [3, 1], [layer0, layer1], 1, [1, 2, 3, 4, 5], room=3))
    write(t, "truncated", minibatch(0, [3, 1], [layer0], 2, [float(i) for i in range(8)])[:-5])
    # Inputs that decoded without an error before the consistency checks: a
    # compacted index outside unique_nodes, an indptr that does not cover the
    # indices, too few feature values, a negative feature_dim.
    write(t, "regress-compacted-out-of-range",
          minibatch(0, [3, 1], [layer0[:5] + ([2, 3, 4],)], 2, [float(i) for i in range(8)]))
    write(t, "regress-indptr-past-indices", minibatch(0, [3, 1], [(layer0[0], [0, 2, 4]) + layer0[2:]], 0, []))
    write(t, "regress-features-short", minibatch(0, [3, 1], [layer0], 2, [1, 2, 3]))
    write(t, "regress-negative-dim", minibatch(0, [3, 1], [layer0], -1, []))
    # Node counts that the nodes array cannot back (faultBM04): a layer with
    # fewer unique nodes than seeds, and a nodes array of another length.
    seeds, indptr, indices, edge_ids, unique, compacted = layer0
    def one_layer(unique_count, nodes):
        body = u64(unique_count) + u64(len(indices)) + u64(len(indices)) + ints("<q", indptr)
        for region in (edge_ids, indices, compacted):
            body += ints("<q", region)
        return u64(MAGIC) + u64(0) + u64(len(seeds)) + u64(1) + body + array(nodes) + u64(0) + array([], "<f")
    write(t, "bad-unique-count", one_layer(1, unique))
    write(t, "bad-nodes-length", one_layer(len(unique), unique[:-1]))


# --- command lines ----------------------------------------------------------

def args(*items):
    return "\0".join(items)


def sample_corpus():
    t = "sample_cli_fuzz"
    base = ["--graph", "@GRAPH", "--seeds", "0,3", "--fanouts", "2,-1", "--rng-seed", "7"]
    write(t, "basic", args(*base))
    write(t, "json", args(*base, "--json"))
    write(t, "replace_weighted", args(*base, "--replace", "--weighted"))
    write(t, "seeds_file", args("--graph", "@PLAIN", "--seeds-file", "@SEEDS", "--fanouts", "1", "--rng-seed", "0",
                                "--threads", "2"))
    write(t, "simcuda_pinned", args(*base, "--runtime", "simcuda", "--placement", "pinned", "--json"))
    write(t, "weighted_unweighted", args("--graph=@PLAIN", "--seeds=1", "--fanouts=3", "--rng-seed=1", "--weighted"))
    write(t, "seed_out_of_range", args("--graph", "@GRAPH", "--seeds", "6", "--fanouts", "1", "--rng-seed", "1"))
    write(t, "bad_fanout", args("--graph", "@GRAPH", "--seeds", "1", "--fanouts", "1,,2", "--rng-seed", "x"))
    write(t, "help", args("--help"))
    write(t, "unknown_flag", args("--bogus", "1"))


def repro_corpus():
    t = "repro_cli_fuzz"
    write(t, "list", args("list"))
    write(t, "list_json", args("list", "--json"))
    write(t, "run", args("run", "F1"))
    write(t, "run_family", args("run", "F1", "--variant", "legacy", "--runtime", "simcuda", "--json"))
    write(t, "run_unknown_variant", args("run", "F2", "--variant", "workaround"))
    write(t, "run_unknown_failure", args("run", "F9"))
    write(t, "all_repeat", args("all", "--repeat", "3", "--runtime", "cuda"))
    write(t, "repeat_zero", args("run", "F10", "--repeat", "0"))
    write(t, "help", args("run", "--help"))
    write(t, "no_subcommand", args("--json"))


if __name__ == "__main__":
    npy_corpus()
    graph_corpus()
    status_json_corpus()
    wire_corpus()
    minibatch_corpus()
    sample_corpus()
    repro_corpus()
