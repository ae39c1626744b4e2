// Provides the per-seed neighbor sampling routine shared by the CPU
// reference, the simcuda host twins and the CUDA kernels, so that every
// device picks bit-identical edges: Philox4x32-10 random keys indexed by
// (rng_seed, layer, purpose, edge id or node and draw), a deterministic
// natural logarithm built from + - * / only, and a bounded max-heap top-k.
//
// Must compile under nvcc and the host compiler alike: only the project's
// kernel API, <cstdint> and Random123; no std containers, no exceptions, no
// recursion. Every double operation goes through Add/Mul/Div, which map to
// the non-contractible __dadd_rn/__dmul_rn/__ddiv_rn intrinsics on the device
// (the host build compiles with -ffp-contract=off), so no FMA can change a
// rounding: see Note [Deterministic sampling keys] in faultline.bzl. The
// exact specification is docs/sampling.md.
#ifndef FAULTLINE_KERNELS_SAMPLING_CORE_H_
#define FAULTLINE_KERNELS_SAMPLING_CORE_H_

#include <Random123/philox.h>

#include <cstdint>

#include "kernels/kernel_api.h"

#if defined(__FAST_MATH__)
#error "sampling_core.h must not be compiled with -ffast-math: keys must round identically everywhere"
#endif

namespace faultline {
namespace kernels {
namespace sampling {

// Purpose tags: the second Philox counter word, so the random streams of
// different sampling modes never overlap.
constexpr uint32_t kTagUniformEdge = 1;   // uniform without replacement, one key per edge
constexpr uint32_t kTagWeightedEdge = 2;  // weighted without replacement, one key per edge
constexpr uint32_t kTagUniformDraw = 3;   // uniform with replacement, one value per draw
constexpr uint32_t kTagWeightedDraw = 4;  // weighted with replacement, one value per draw
constexpr uint32_t kTagUniformPick = 5;   // uniform without replacement by Floyd's algorithm, one value per draw
constexpr uint32_t kTagWeightedPick = 6;  // weighted without replacement by rejection, one value per draw
// The loader's item shuffle (reference/loader/item_sampler.cc), one key per
// item: no sampling mode, but a stream of its own all the same. Like every
// tag it stays below 256, since the draw tags share word1 with node bits
// from bit 8 on.
constexpr uint32_t kTagShuffle = 16;

// Largest fanout sampled with Floyd's algorithm (k draws, O(k^2) duplicate
// checks); above it, one key per edge (O(degree)) is cheaper.
constexpr int64_t kMaxFloydFanout = 256;

// Largest fanout sampled weighted by rejection (draws checked against the
// picks so far, O(k^2) duplicate checks); above it, one key per edge.
constexpr int64_t kMaxRejectionFanout = 256;

// Describes one sampling call; the same for every seed of the call.
struct SamplingParams {
  const int64_t* indptr = nullptr;  // CSC offsets, num_nodes + 1 entries
  const float* weights = nullptr;   // one per edge; read only when weighted
  int64_t fanout = 0;               // picks per seed; -1 = all (eligible) edges
  bool replace = false;             // draw with replacement
  bool weighted = false;            // use weights (zero-weight edges are never picked)
  uint64_t rng_seed = 0;
  uint32_t layer = 0;  // the layer index of multi-layer sampling
  // The graph's weight table (docs/sampling.md, "Weight table";
  // kernels/weight_table.h builds it), read only when weighted without
  // replacement. Every sampler sets it; without it (null) the rejection path
  // is never taken and every weighted seed uses keys, which picks other
  // edges: only tests of the key path leave it out.
  const uint64_t* weight_alias = nullptr;      // per edge: its segment's alias column, (threshold << 32) | alias
  const int32_t* rejection_fanouts = nullptr;  // per node: the largest fanout it samples by rejection
};

// Holds the key of one candidate edge in the top-k heap: `real` for weighted
// keys, `bits` for uniform keys (the other field stays 0).
struct SampleKey {
  double real;
  uint64_t bits;
};

// ---------------------------------------------------------------------------
// Deterministic arithmetic.

// Returns a + b rounded to nearest, never fused with a neighbouring multiply.
FL_HOST_DEVICE FL_INLINE double Add(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

// Returns a * b rounded to nearest, never fused with a neighbouring add.
FL_HOST_DEVICE FL_INLINE double Mul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

// Returns a / b rounded to nearest (IEEE division on both sides).
FL_HOST_DEVICE FL_INLINE double Div(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}

// Returns the high 64 bits of the 128-bit product a * b from four 32-bit
// products: the form the device runs.
FL_HOST_DEVICE FL_INLINE uint64_t MulHi64Portable(uint64_t a, uint64_t b) {
  const uint64_t a_lo = a & 0xffffffffu, a_hi = a >> 32;
  const uint64_t b_lo = b & 0xffffffffu, b_hi = b >> 32;
  const uint64_t p0 = a_lo * b_lo, p1 = a_lo * b_hi, p2 = a_hi * b_lo, p3 = a_hi * b_hi;
  const uint64_t mid = (p0 >> 32) + (p1 & 0xffffffffu) + (p2 & 0xffffffffu);
  return p3 + (p1 >> 32) + (p2 >> 32) + (mid >> 32);
}

// Returns the high 64 bits of the 128-bit product a * b: one multiply
// instruction on a host with a 128-bit type, MulHi64Portable elsewhere (the
// same value; sampling_core_test compares both with the 128-bit product).
FL_HOST_DEVICE FL_INLINE uint64_t MulHi64(uint64_t a, uint64_t b) {
#if defined(__SIZEOF_INT128__) && !defined(__CUDA_ARCH__)
  return static_cast<uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64);
#else
  return MulHi64Portable(a, b);
#endif
}

// Returns -ln(n * 2^-53) for an integer n in [1, 2^53], using only integer
// bit operations and Add/Mul/Div. Writes n * 2^-53 = m * 2^e with m in
// [sqrt(1/2), sqrt(2)], then ln(m) = 2 * atanh(s), s = (m - 1) / (m + 1),
// summed as the odd series s + s^3/3 + ... + s^21/21 (|s| <= 0.1716, so the
// dropped terms are below 2^-60 relative). Never -0: NegLogUnit(2^53) is +0.
FL_HOST_DEVICE FL_INLINE double NegLogUnit(uint64_t n) {
  // Position of the highest set bit (0..53), by binary search on shifts.
  int msb = 0;
  uint64_t x = n;
  if (x >> 32) {
    x >>= 32;
    msb += 32;
  }
  if (x >> 16) {
    x >>= 16;
    msb += 16;
  }
  if (x >> 8) {
    x >>= 8;
    msb += 8;
  }
  if (x >> 4) {
    x >>= 4;
    msb += 4;
  }
  if (x >> 2) {
    x >>= 2;
    msb += 2;
  }
  if (x >> 1) {
    msb += 1;
  }
  // Normalize to a 53-bit integer with its top bit at position 52: m in [1, 2).
  const uint64_t normalized = msb <= 52 ? (n << (52 - msb)) : (n >> (msb - 52));
  double m = Mul(static_cast<double>(normalized), 0x1p-52);
  int e = msb - 53;
  if (m > 0x1.6a09e667f3bcdp+0) {  // sqrt(2)
    m = Mul(m, 0.5);
    e += 1;
  }
  const double s = Div(Add(m, -1.0), Add(m, 1.0));
  const double z = Mul(s, s);
  double p = 0x1.8618618618618p-5;           // 1/21
  p = Add(Mul(p, z), 0x1.af286bca1af28p-5);  // 1/19
  p = Add(Mul(p, z), 0x1.e1e1e1e1e1e1ep-5);  // 1/17
  p = Add(Mul(p, z), 0x1.1111111111111p-4);  // 1/15
  p = Add(Mul(p, z), 0x1.3b13b13b13b14p-4);  // 1/13
  p = Add(Mul(p, z), 0x1.745d1745d1746p-4);  // 1/11
  p = Add(Mul(p, z), 0x1.c71c71c71c71cp-4);  // 1/9
  p = Add(Mul(p, z), 0x1.2492492492492p-3);  // 1/7
  p = Add(Mul(p, z), 0x1.999999999999ap-3);  // 1/5
  p = Add(Mul(p, z), 0x1.5555555555555p-2);  // 1/3
  p = Add(Mul(p, z), 1.0);
  const double log_m = Mul(Mul(2.0, s), p);
  const double log_u = Add(log_m, Mul(static_cast<double>(e), 0x1.62e42fefa39efp-1));  // e * ln 2
  // 0 + (-log_u): the same value, but n = 2^53 (log_u = +0) gives +0, not
  // -0 (docs/sampling.md: u = 1 gives key 0). Keys compare by value, so no
  // pick depends on it.
  return Add(0.0, -log_u);
}

// ---------------------------------------------------------------------------
// Random values.

// Returns the 64-bit random value of one Philox4x32-10 block:
// key = (seed low 32, seed high 32), counter = (layer, word1, word2, word3),
// value = (out[1] << 32) | out[0].
FL_HOST_DEVICE FL_INLINE uint64_t RandomBits(uint64_t rng_seed, uint32_t layer, uint32_t word1, uint32_t word2,
                                             uint32_t word3) {
  r123::Philox4x32 philox;
  r123::Philox4x32::ctr_type counter = {{layer, word1, word2, word3}};
  r123::Philox4x32::key_type key = {{static_cast<uint32_t>(rng_seed), static_cast<uint32_t>(rng_seed >> 32)}};
  r123::Philox4x32::ctr_type out = philox(counter, key);
  return (static_cast<uint64_t>(out.v[1]) << 32) | out.v[0];
}

// Returns the random value of an edge: counter = (layer, tag, edge low 32, edge high 32).
FL_HOST_DEVICE FL_INLINE uint64_t EdgeBits(uint64_t rng_seed, uint32_t layer, uint32_t tag, int64_t edge) {
  const uint64_t id = static_cast<uint64_t>(edge);
  return RandomBits(rng_seed, layer, tag, static_cast<uint32_t>(id), static_cast<uint32_t>(id >> 32));
}

// Returns the random value of draw `draw` of `node`:
// counter = (layer, tag | (node bits 32..55) << 8, node low 32, draw).
FL_HOST_DEVICE FL_INLINE uint64_t DrawBits(uint64_t rng_seed, uint32_t layer, uint32_t tag, int64_t node,
                                           int64_t draw) {
  const uint64_t id = static_cast<uint64_t>(node);
  return RandomBits(rng_seed, layer, tag | (static_cast<uint32_t>(id >> 32) << 8), static_cast<uint32_t>(id),
                    static_cast<uint32_t>(draw));
}

// Returns the uniform-without-replacement key of an edge (smaller wins).
FL_HOST_DEVICE FL_INLINE uint64_t UniformEdgeKey(uint64_t rng_seed, uint32_t layer, int64_t edge) {
  return EdgeBits(rng_seed, layer, kTagUniformEdge, edge);
}

// Returns the Efraimidis-Spirakis key E / w of an edge with weight w > 0,
// where E = -ln(u), u = ((bits >> 11) + 1) * 2^-53 in (0, 1] (smaller wins).
FL_HOST_DEVICE FL_INLINE double WeightedKeyFromBits(uint64_t bits, float weight) {
  return Div(NegLogUnit((bits >> 11) + 1), static_cast<double>(weight));
}

FL_HOST_DEVICE FL_INLINE double WeightedEdgeKey(uint64_t rng_seed, uint32_t layer, int64_t edge, float weight) {
  return WeightedKeyFromBits(EdgeBits(rng_seed, layer, kTagWeightedEdge, edge), weight);
}

// Returns true only when the weighted key of an edge with random `bits` is certainly above
// `worst_kept`, without computing its logarithm: -ln(u) >= 1 - u, and the
// computed key is within 1e-13 relative of the exact one, far inside the
// 1e-9 margin. A pure pruning: it never changes which edges are picked.
FL_HOST_DEVICE FL_INLINE bool WeightedKeyCannotEnter(uint64_t bits, float weight, double worst_kept) {
  const uint64_t n = (bits >> 11) + 1;
  const double one_minus_u = Mul(static_cast<double>((uint64_t{1} << 53) - n), 0x1p-53);  // exact
  return one_minus_u > Mul(Mul(worst_kept, static_cast<double>(weight)), 1.000000001);
}

// ---------------------------------------------------------------------------
// Top-k: a max-heap of (key, edge) pairs, so the root is the worst kept pick.

// Returns whether (a, edge_a) orders before (b, edge_b).
FL_HOST_DEVICE FL_INLINE bool KeyLess(const SampleKey& a, int64_t edge_a, const SampleKey& b, int64_t edge_b) {
  if (a.real != b.real) return a.real < b.real;
  if (a.bits != b.bits) return a.bits < b.bits;
  return edge_a < edge_b;
}

// Restores the max-heap property below position i.
FL_HOST_DEVICE FL_INLINE void HeapSiftDown(SampleKey* keys, int64_t* edges, int64_t size, int64_t i) {
  while (true) {
    const int64_t left = 2 * i + 1;
    if (left >= size) return;
    int64_t largest = left;
    const int64_t right = left + 1;
    if (right < size && KeyLess(keys[left], edges[left], keys[right], edges[right])) largest = right;
    if (!KeyLess(keys[i], edges[i], keys[largest], edges[largest])) return;
    const SampleKey k = keys[i];
    keys[i] = keys[largest];
    keys[largest] = k;
    const int64_t e = edges[i];
    edges[i] = edges[largest];
    edges[largest] = e;
    i = largest;
  }
}

// Restores the max-heap property above position i.
FL_HOST_DEVICE FL_INLINE void HeapSiftUp(SampleKey* keys, int64_t* edges, int64_t i) {
  while (i > 0) {
    const int64_t parent = (i - 1) / 2;
    if (!KeyLess(keys[parent], edges[parent], keys[i], edges[i])) return;
    const SampleKey k = keys[i];
    keys[i] = keys[parent];
    keys[parent] = k;
    const int64_t e = edges[i];
    edges[i] = edges[parent];
    edges[parent] = e;
    i = parent;
  }
}

// Offers a candidate to a heap of capacity k holding *size entries.
FL_HOST_DEVICE FL_INLINE void HeapOffer(SampleKey* keys, int64_t* edges, int64_t* size, int64_t k, const SampleKey& key,
                                        int64_t edge) {
  if (*size < k) {
    keys[*size] = key;
    edges[*size] = edge;
    HeapSiftUp(keys, edges, *size);
    ++*size;
  } else if (KeyLess(key, edge, keys[0], edges[0])) {
    keys[0] = key;
    edges[0] = edge;
    HeapSiftDown(keys, edges, k, 0);
  }
}

// Restores the max-heap property of plain edge ids below position i.
FL_HOST_DEVICE FL_INLINE void IdSiftDown(int64_t* ids, int64_t size, int64_t i) {
  while (true) {
    const int64_t left = 2 * i + 1;
    if (left >= size) return;
    const int64_t largest = (left + 1 < size && ids[left] < ids[left + 1]) ? left + 1 : left;
    if (ids[i] >= ids[largest]) return;
    const int64_t t = ids[i];
    ids[i] = ids[largest];
    ids[largest] = t;
    i = largest;
  }
}

// Sorts edge ids ascending in place (heapsort: no recursion, no extra memory).
FL_HOST_DEVICE FL_INLINE void SortEdgeIds(int64_t* ids, int64_t n) {
  for (int64_t i = n / 2; i-- > 0;) IdSiftDown(ids, n, i);
  for (int64_t end = n - 1; end > 0; --end) {
    const int64_t t = ids[0];
    ids[0] = ids[end];
    ids[end] = t;
    IdSiftDown(ids, end, 0);
  }
}

// ---------------------------------------------------------------------------
// Per-seed sampling.

// Returns the number of edges of `node` that may be picked: all of them when
// unweighted, those with weight > 0 when weighted.
FL_HOST_DEVICE FL_INLINE int64_t EligibleCount(const SamplingParams& p, int64_t node) {
  const int64_t begin = p.indptr[node], end = p.indptr[node + 1];
  if (!p.weighted) return end - begin;
  int64_t count = 0;
  for (int64_t e = begin; e < end; ++e) count += p.weights[e] > 0.0f ? 1 : 0;
  return count;
}

// Returns how many edges SampleSeed writes for a node with `eligible`
// eligible edges, so a caller can size the output (a prefix sum over seeds)
// before sampling. Expects fanout >= -1.
FL_HOST_DEVICE FL_INLINE int64_t SampledCountOf(const SamplingParams& p, int64_t eligible) {
  if (p.fanout < 0) return eligible;
  if (p.replace) return eligible > 0 ? p.fanout : 0;
  return eligible < p.fanout ? eligible : p.fanout;
}

// Returns whether SampleSeed picks a node's edges by rejection: weighted,
// without replacement, the weight table given, and 0 < fanout <=
// rejection_fanouts[node], which holds exactly when fanout <=
// kMaxRejectionFanout, fanout < eligible and fanout * (largest weight) <=
// total (docs/sampling.md, "Rule"). Then i picks hold at most i / fanout of
// the weight, so the next draw is new with probability at least 1 - i /
// fanout: expected draws <= fanout * H(fanout) (3.3 * fanout at 15), each
// one read of the alias table.
FL_HOST_DEVICE FL_INLINE bool UsesWeightedRejection(const SamplingParams& p, int64_t node) {
  if (!p.weighted || p.replace || p.fanout <= 0 || p.rejection_fanouts == nullptr || p.weight_alias == nullptr) {
    return false;
  }
  return p.fanout <= p.rejection_fanouts[node];
}

// EligibleCount(p, node), but weighted edges are counted only until the
// count reaches what SampleSeed and SampledCountOf tell apart: fanout + 1
// without replacement, 1 with, every edge for fanout -1. A hub's count then
// costs O(fanout) reads instead of one per edge (one thread counts each
// seed on the device), and every decision is the same as with the full count.
FL_HOST_DEVICE FL_INLINE int64_t EligibleCountForSampling(const SamplingParams& p, int64_t node) {
  const int64_t begin = p.indptr[node], end = p.indptr[node + 1];
  if (!p.weighted) return end - begin;
  // The table says a rejection seed has more than fanout eligible edges.
  if (UsesWeightedRejection(p, node)) return p.fanout + 1;
  const int64_t enough = p.fanout < 0 ? end - begin : (p.replace ? 1 : p.fanout + 1);
  int64_t count = 0;
  for (int64_t e = begin; e < end && count < enough; ++e) count += p.weights[e] > 0.0f ? 1 : 0;
  return count;
}

FL_HOST_DEVICE FL_INLINE int64_t SampledCount(const SamplingParams& p, int64_t node) {
  return SampledCountOf(p, EligibleCountForSampling(p, node));
}

// Returns whether SampleSeed picks a node's edges by weighted keys, one
// Philox block per edge (weighted, without replacement, fanout < eligible,
// not UsesWeightedRejection): the one mode whose cost grows with the
// degree. A caller may run that mode itself, with the random values
// computed in batches, and pick the same edges: from an empty heap,
// OfferWeightedEdge for every edge with weight > 0 in ascending order, then
// SortEdgeIds(edges, size).
FL_HOST_DEVICE FL_INLINE bool UsesWeightedTopK(const SamplingParams& p, int64_t node, int64_t eligible) {
  return p.weighted && !p.replace && p.fanout > 0 && eligible > p.fanout && !UsesWeightedRejection(p, node);
}

// The edge that draw bits `bits` of a rejection seed with segment [begin,
// begin + degree) lands on: column c = mulhi64(bits, degree), coin = bits 32..63
// of the low half of bits * degree (uniform and independent of c); the draw
// keeps c when coin < its threshold, else takes its alias. Zero-weight
// columns have threshold 0 and are nobody's alias, so the edge has weight > 0.
FL_HOST_DEVICE FL_INLINE int64_t WeightedAliasDraw(const uint64_t* alias, int64_t begin, int64_t degree,
                                                   uint64_t bits) {
  const uint64_t d = static_cast<uint64_t>(degree);
  const uint64_t column = MulHi64(bits, d);
  const uint64_t coin = (bits * d) >> 32;
  const uint64_t entry = alias[begin + static_cast<int64_t>(column)];
  return begin + static_cast<int64_t>(coin < (entry >> 32) ? column : (entry & 0xffffffffu));
}

// Appends edge `e` to picks[0, *picked) unless an earlier pick is `e`: the
// repeat check of a rejection draw (O(picks); fanouts are at most 256).
FL_HOST_DEVICE FL_INLINE void KeepIfNew(int64_t e, int64_t* picks, int64_t* picked) {
  for (int64_t m = 0; m < *picked; ++m) {
    if (picks[m] == e) return;
  }
  picks[(*picked)++] = e;
}

// Samples p.fanout distinct edges of `node` by successive weighted draws
// (UsesWeightedRejection holds): draw j = 0, 1, 2, ... takes
// DrawBits(rng_seed, layer, kTagWeightedPick, node, j), lands on
// WeightedAliasDraw, and is kept unless an earlier kept draw landed there
// (a rejected draw still uses up its j). Writes the picks in ascending edge
// id to out_edges and returns p.fanout.
FL_HOST_DEVICE FL_INLINE int64_t SampleWeightedRejection(const SamplingParams& p, int64_t node, int64_t* out_edges) {
  const int64_t begin = p.indptr[node], degree = p.indptr[node + 1] - begin;
  int64_t picked = 0;
  for (int64_t j = 0; picked < p.fanout; ++j) {
    const uint64_t bits = DrawBits(p.rng_seed, p.layer, kTagWeightedPick, node, j);
    KeepIfNew(WeightedAliasDraw(p.weight_alias, begin, degree, bits), out_edges, &picked);
  }
  SortEdgeIds(out_edges, picked);
  return picked;
}

// Returns whether SampleSeed picks a node's edges by Robert Floyd's
// algorithm (uniform, without replacement, fanout < eligible, fanout <=
// kMaxFloydFanout). A caller may run that mode itself with the draws'
// random values computed in batches: FloydDraw for i = 0 .. fanout - 1, then
// SortEdgeIds(out_edges, fanout).
FL_HOST_DEVICE FL_INLINE bool UsesFloyd(const SamplingParams& p, int64_t eligible) {
  return !p.weighted && !p.replace && p.fanout > 0 && eligible > p.fanout && p.fanout <= kMaxFloydFanout;
}

// Returns whether any seed of a hop sampled with `p` may use SampleSeed's
// scratch keys: only the top-k modes (weighted, or uniform with a fanout
// above kMaxFloydFanout, without replacement) keep keys. Otherwise a caller
// may pass a null scratch.
FL_HOST_DEVICE FL_INLINE bool MayUseKeyScratch(const SamplingParams& p) {
  return !p.replace && p.fanout > 0 && (p.weighted || p.fanout > kMaxFloydFanout);
}

// Draw i's candidate position in [0, degree - k + i] (FloydDraw's pick
// before the check against earlier draws).
FL_HOST_DEVICE FL_INLINE int64_t FloydCandidate(int64_t degree, int64_t k, int64_t i, uint64_t bits) {
  return static_cast<int64_t>(MulHi64(bits, static_cast<uint64_t>(degree - k + i) + 1));
}

// Draw i of Floyd's algorithm choosing k of the edges [begin, begin +
// degree): picks from positions [0, degree - k + i] with `bits` =
// DrawBits(rng_seed, layer, kTagUniformPick, node, i), and takes the last
// position instead when the pick was drawn before (draws 0 .. i - 1 are in
// out_edges[0, i)).
FL_HOST_DEVICE FL_INLINE void FloydDraw(int64_t begin, int64_t degree, int64_t k, int64_t i, uint64_t bits,
                                        int64_t* out_edges) {
  const int64_t j = degree - k + i;
  const int64_t candidate = begin + FloydCandidate(degree, k, i, bits);
  bool taken = false;
  for (int64_t m = 0; m < i && !taken; ++m) taken = out_edges[m] == candidate;
  out_edges[i] = taken ? begin + j : candidate;
}

// Offers edge `e` to the top-p.fanout heap of the top-k modes (weighted:
// only edges with weight > 0; uniform with fanout above kMaxFloydFanout:
// every edge). Edges must be offered in ascending order.
FL_HOST_DEVICE FL_INLINE void OfferTopKEdge(const SamplingParams& p, int64_t e, SampleKey* keys, int64_t* edges,
                                            int64_t* size);

// Offers edge `e` (weight > 0) with random value `bits` =
// EdgeBits(rng_seed, layer, kTagWeightedEdge, e) to the top-p.fanout heap of
// *size entries (keys, edges). Edges must be offered in ascending order.
FL_HOST_DEVICE FL_INLINE void OfferWeightedEdge(const SamplingParams& p, int64_t e, uint64_t bits, SampleKey* keys,
                                                int64_t* edges, int64_t* size) {
  const float weight = p.weights[e];
  if (*size == p.fanout && WeightedKeyCannotEnter(bits, weight, keys[0].real)) return;
  SampleKey key;
  key.real = WeightedKeyFromBits(bits, weight);
  key.bits = 0;
  HeapOffer(keys, edges, size, p.fanout, key, e);
}

// Samples the incoming edges of `node` and writes SampledCount(p, node) global
// edge ids to out_edges: ascending edge id without replacement (and for
// fanout -1), draw order with replacement. `scratch` must have room for
// SampledCount(p, node) keys. Returns the number of edges written.
FL_HOST_DEVICE FL_INLINE int64_t SampleSeed(const SamplingParams& p, int64_t node, int64_t* out_edges,
                                            SampleKey* scratch) {
  const int64_t begin = p.indptr[node], end = p.indptr[node + 1];
  const int64_t degree = end - begin;
  const int64_t eligible = EligibleCountForSampling(p, node);
  if (eligible == 0 || p.fanout == 0) return 0;

  // Every eligible edge, ascending.
  if (p.fanout < 0 || (!p.replace && eligible <= p.fanout)) {
    int64_t n = 0;
    for (int64_t e = begin; e < end; ++e) {
      if (!p.weighted || p.weights[e] > 0.0f) out_edges[n++] = e;
    }
    return n;
  }

  if (p.replace) {
    if (!p.weighted) {
      for (int64_t j = 0; j < p.fanout; ++j) {
        const uint64_t bits = DrawBits(p.rng_seed, p.layer, kTagUniformDraw, node, j);
        out_edges[j] = begin + static_cast<int64_t>(MulHi64(bits, static_cast<uint64_t>(degree)));
      }
      return p.fanout;
    }
    double total = 0.0;
    int64_t last_positive = begin;
    for (int64_t e = begin; e < end; ++e) {
      total = Add(total, static_cast<double>(p.weights[e]));
      if (p.weights[e] > 0.0f) last_positive = e;
    }
    for (int64_t j = 0; j < p.fanout; ++j) {
      const uint64_t bits = DrawBits(p.rng_seed, p.layer, kTagWeightedDraw, node, j);
      const double target = Mul(Mul(static_cast<double>(bits >> 11), 0x1p-53), total);  // u in [0, 1)
      int64_t pick = last_positive;  // reached only if rounding left no sum above target
      double cumulative = 0.0;
      for (int64_t e = begin; e < end; ++e) {
        cumulative = Add(cumulative, static_cast<double>(p.weights[e]));
        if (p.weights[e] > 0.0f && cumulative > target) {
          pick = e;
          break;
        }
      }
      out_edges[j] = pick;
    }
    return p.fanout;
  }

  // Uniform without replacement, small fanout < degree: Robert Floyd's
  // algorithm draws k distinct positions of [0, degree) with k draws, so hub
  // nodes cost O(k) random values instead of one per edge.
  if (UsesFloyd(p, eligible)) {
    const int64_t k = p.fanout;
    for (int64_t i = 0; i < k; ++i) {
      FloydDraw(begin, degree, k, i, DrawBits(p.rng_seed, p.layer, kTagUniformPick, node, i), out_edges);
    }
    SortEdgeIds(out_edges, k);
    return k;
  }

  // Weighted without replacement, few picks of a spread-out weight: draws
  // from the alias table, O(fanout) expected.
  if (UsesWeightedRejection(p, node)) return SampleWeightedRejection(p, node, out_edges);

  // Without replacement, fanout < eligible: the fanout smallest (key, edge).
  int64_t size = 0;
  for (int64_t e = begin; e < end; ++e) OfferTopKEdge(p, e, scratch, out_edges, &size);
  SortEdgeIds(out_edges, size);
  return size;
}

FL_HOST_DEVICE FL_INLINE void OfferTopKEdge(const SamplingParams& p, int64_t e, SampleKey* keys, int64_t* edges,
                                            int64_t* size) {
  if (p.weighted) {
    if (p.weights[e] > 0.0f) {
      OfferWeightedEdge(p, e, EdgeBits(p.rng_seed, p.layer, kTagWeightedEdge, e), keys, edges, size);
    }
    return;
  }
  SampleKey key;
  key.real = 0.0;
  key.bits = UniformEdgeKey(p.rng_seed, p.layer, e);
  HeapOffer(keys, edges, size, p.fanout, key, e);
}

// ---------------------------------------------------------------------------
// A hub's top-k in chunks (the device's split of one seed across threads).
//
// SampleSeed's top-k modes offer every edge of a seed to one heap: one
// thread per seed, so on a GPU a hub (in-degree 156,811 in the benchmark
// graph) keeps its thread busy long after the others are done. The device
// sampler instead splits such a seed's edges into chunks of
// TopKChunkEdges(p): each chunk keeps its own top-k (SampleTopKChunk, one
// thread each), and the seed's thread offers the chunks' survivors to its
// heap (MergeTopKChunks). The heap orders (key, edge) strictly, so an edge
// of the seed's top-k is in its chunk's top-k, and the merge keeps exactly
// SampleSeed's edges, whatever the split.

constexpr int64_t kTopKChunkEdges = 1024;

// The edges of one chunk: at least kTopKChunkEdges, and eight times the
// fanout, so that the survivors (fanout per chunk) the merge offers are at
// most an eighth of the seed's edges, plus one fanout for its last chunk.
FL_HOST_DEVICE FL_INLINE int64_t TopKChunkEdges(const SamplingParams& p) {
  if (p.fanout <= kTopKChunkEdges / 8) return kTopKChunkEdges;
  return p.fanout < (int64_t{1} << 59) ? 8 * p.fanout : int64_t{1} << 62;  // no overflow: larger than any graph
}

// Returns the number of chunks SampleSeed's top-k of `node`, with
// `eligible` edges (EligibleCountForSampling), is split into on the
// device: 0 when it is not a top-k seed (a rejection seed neither) or has
// one chunk of edges.
FL_HOST_DEVICE FL_INLINE int64_t TopKChunksOf(const SamplingParams& p, int64_t node, int64_t eligible) {
  const int64_t chunk = TopKChunkEdges(p);
  const int64_t degree = p.indptr[node + 1] - p.indptr[node];
  if (degree <= chunk || !MayUseKeyScratch(p) || eligible <= p.fanout) return 0;
  if (UsesWeightedRejection(p, node)) return 0;
  return (degree + chunk - 1) / chunk;
}

FL_HOST_DEVICE FL_INLINE int64_t TopKChunks(const SamplingParams& p, int64_t node) {
  return TopKChunksOf(p, node, EligibleCountForSampling(p, node));
}

// Writes the top-p.fanout edges of chunk `chunk` of `node`'s edges to
// edges[0, p.fanout), ascending, then -1 in the slots left (a chunk may
// hold fewer eligible edges). `keys` has room for p.fanout keys.
FL_HOST_DEVICE FL_INLINE void SampleTopKChunk(const SamplingParams& p, int64_t node, int64_t chunk, SampleKey* keys,
                                              int64_t* edges) {
  const int64_t chunk_edges = TopKChunkEdges(p);
  const int64_t begin = p.indptr[node] + chunk * chunk_edges;
  const int64_t end = p.indptr[node + 1] - begin > chunk_edges ? begin + chunk_edges : p.indptr[node + 1];
  int64_t size = 0;
  for (int64_t e = begin; e < end; ++e) OfferTopKEdge(p, e, keys, edges, &size);
  SortEdgeIds(edges, size);
  for (int64_t i = size; i < p.fanout; ++i) edges[i] = -1;
}

// Writes SampleSeed(p, node, ...)'s edges from the survivors of `chunks`
// chunks (SampleTopKChunk's output, p.fanout slots each, in chunk order)
// to out_edges; `scratch` has room for p.fanout keys. Returns p.fanout.
FL_HOST_DEVICE FL_INLINE int64_t MergeTopKChunks(const SamplingParams& p, const int64_t* survivors, int64_t chunks,
                                                 int64_t* out_edges, SampleKey* scratch) {
  int64_t size = 0;
  for (int64_t i = 0; i < chunks * p.fanout; ++i) {
    if (survivors[i] >= 0) OfferTopKEdge(p, survivors[i], scratch, out_edges, &size);
  }
  SortEdgeIds(out_edges, size);
  return size;
}

}  // namespace sampling
}  // namespace kernels
}  // namespace faultline

#endif  // FAULTLINE_KERNELS_SAMPLING_CORE_H_
