// Property tests of neighbor sampling on random small graphs, run on every
// backend of the backend registry (CPU reference at several thread counts,
// simcuda with both graph placements, and real CUDA in the gpu target):
// bit-identical results to the cpu-1 baseline for one hop and for multi-layer
// sampling, the same rejections of bad input, picks that exist and respect
// fanout and weights, a naive top-k oracle, unique_and_compact round trips,
// and fixed-seed chi-square checks of the pick distributions. Reproduce a
// failure with RC_PARAMS="seed=<seed printed by rapidcheck>".
#include <Random123/philox.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "properties/sampling_backends.h"
#include "reference/base/status_matchers.h"
#include "reference/graph/generators.h"
#include "reference/sampling/multi_layer.h"
#include "reference/sampling/sample_neighbors.h"
#include "reference/sampling/unique_and_compact.h"

namespace faultline {
namespace properties {
namespace {

// Fails every test of the binary, with the reason, when the target asks for
// real CUDA (FAULTLINE_TEST_RUNTIME=cuda) on a machine without a usable CUDA
// device: a gpu run must not pass by skipping.
class CudaRequirement : public testing::Environment {
 public:
  void SetUp() override {
    if (const std::optional<std::string> reason = MissingCudaReason()) GTEST_FAIL() << *reason;
  }
};

testing::Environment* const kCudaRequirement = testing::AddGlobalTestEnvironment(new CudaRequirement);

// Holds a generated graph and a request on it.
struct Case {
  std::shared_ptr<CscGraph> graph;
  SampleRequest request;
};

// kSpread: always weighted, with everyday weights of a narrow range (and
// zeros), so that small fanouts take the rejection path (docs/sampling.md).
enum class Weights { kMaybe, kAlways, kSpread };

// Generates a fanout: mostly small (-1 = all, 0, a few), sometimes larger
// than any degree of the generated graphs.
int64_t GenFanout() {
  return *rc::gen::weightedOneOf<int64_t>(
      {{4, rc::gen::inRange<int64_t>(-1, 13)}, {1, rc::gen::element<int64_t>(40, 250)}});
}

// Generates an edge weight the spec allows (docs/sampling.md: finite, >= 0,
// 0 or normal): zeros (also -0, never picked either), everyday values, and
// the extremes FLT_MIN and FLT_MAX (keys E / w near 2^126 and 2^-128 times
// E, with-replacement totals far above any float).
rc::Gen<float> GenWeight() {
  return rc::gen::weightedOneOf<float>({{8, rc::gen::element(0.0f, 0.0f, 1e-3f, 0.5f, 1.0f, 2.0f, 3.5f, 100.0f)},
                                        {1, rc::gen::element(-0.0f, FLT_MIN, FLT_MAX)}});
}

// Generates a graph of up to 40 nodes with a hub and, with kAlways or by
// chance, edge weights that include zeros; then a request with possibly
// repeated seeds (weighted only when the graph has weights).
Case GenCase(Weights weights = Weights::kMaybe) {
  const int64_t num_nodes = *rc::gen::inRange<int64_t>(1, 41);
  const bool has_weights = weights != Weights::kMaybe || *rc::gen::arbitrary<bool>();
  const int64_t num_edges = *rc::gen::inRange<int64_t>(0, 201);
  const int64_t hub = *rc::gen::inRange<int64_t>(0, num_nodes);
  std::vector<std::pair<int64_t, int64_t>> edges;
  std::vector<float> edge_weights;
  for (int64_t i = 0; i < num_edges; ++i) {
    const int64_t src = *rc::gen::inRange<int64_t>(0, num_nodes);
    const bool to_hub = *rc::gen::inRange(0, 3) == 0;
    const int64_t dst = to_hub ? hub : *rc::gen::inRange<int64_t>(0, num_nodes);
    edges.emplace_back(src, dst);
    if (has_weights) {
      edge_weights.push_back(weights == Weights::kSpread ? *rc::gen::element(0.0f, 0.5f, 1.0f, 2.0f, 3.5f)
                                                         : *GenWeight());
    }
  }
  Result<CscGraph> graph =
      GraphFromEdges(num_nodes, edges, has_weights ? std::optional<std::vector<float>>(edge_weights) : std::nullopt);
  RC_ASSERT(graph.ok());
  Case c;
  c.graph = std::make_shared<CscGraph>(std::move(graph).value());
  c.request.graph = c.graph.get();
  const int64_t num_seeds = *rc::gen::inRange<int64_t>(0, 31);
  for (int64_t i = 0; i < num_seeds; ++i) {
    const bool pick_hub = *rc::gen::inRange(0, 4) == 0;
    c.request.seeds.push_back(pick_hub ? hub : *rc::gen::inRange<int64_t>(0, num_nodes));
  }
  c.request.fanout = GenFanout();
  c.request.replace = *rc::gen::arbitrary<bool>();
  c.request.weighted = has_weights && *rc::gen::arbitrary<bool>();
  c.request.rng_seed = *rc::gen::arbitrary<uint64_t>();
  c.request.layer =
      *rc::gen::weightedOneOf<uint32_t>({{4, rc::gen::inRange<uint32_t>(0, 4)}, {1, rc::gen::arbitrary<uint32_t>()}});
  return c;
}

SampledSubgraph Run(const std::string& backend, const SampleRequest& request) {
  Result<SampledSubgraph> result = RunOnBackend(backend, request);
  if (!result.ok()) RC_FAIL(backend + " failed: " + result.status().ToString());
  return std::move(result).value();
}

// Returns the edges of `node` that may be picked, ascending.
std::vector<int64_t> EligibleEdges(const CscGraph& graph, int64_t node, bool weighted) {
  std::vector<int64_t> edges;
  for (int64_t e = graph.indptr()[node]; e < graph.indptr()[node + 1]; ++e) {
    if (!weighted || graph.weights()[e] > 0.0f) edges.push_back(e);
  }
  return edges;
}

// Returns the picks of seeds[i] as a vector.
std::vector<int64_t> PicksOf(const SampledSubgraph& s, size_t i) {
  return std::vector<int64_t>(s.original_edge_ids.begin() + s.indptr[i], s.original_edge_ids.begin() + s.indptr[i + 1]);
}

// Returns the Philox4x32-10 value of the specification, computed directly.
uint64_t OracleBits(uint64_t rng_seed, uint32_t layer, uint32_t tag, int64_t edge) {
  r123::Philox4x32 philox;
  r123::Philox4x32::ctr_type counter = {
      {layer, tag, static_cast<uint32_t>(edge), static_cast<uint32_t>(static_cast<uint64_t>(edge) >> 32)}};
  r123::Philox4x32::key_type key = {{static_cast<uint32_t>(rng_seed), static_cast<uint32_t>(rng_seed >> 32)}};
  r123::Philox4x32::ctr_type out = philox(counter, key);
  return (static_cast<uint64_t>(out.v[1]) << 32) | out.v[0];
}

// Returns the Philox value of draw `draw` of `node`, computed independently
// of the sampling core: counter = (layer, tag | node bits 32..55 << 8, node low 32, draw).
uint64_t OracleDrawBits(uint64_t rng_seed, uint32_t layer, uint32_t tag, int64_t node, int64_t draw) {
  const uint64_t id = static_cast<uint64_t>(node);
  r123::Philox4x32 philox;
  r123::Philox4x32::ctr_type counter = {
      {layer, tag | (static_cast<uint32_t>(id >> 32) << 8), static_cast<uint32_t>(id), static_cast<uint32_t>(draw)}};
  r123::Philox4x32::key_type key = {{static_cast<uint32_t>(rng_seed), static_cast<uint32_t>(rng_seed >> 32)}};
  r123::Philox4x32::ctr_type out = philox(counter, key);
  return (static_cast<uint64_t>(out.v[1]) << 32) | out.v[0];
}

// Computes uniform picks of a small fanout with Floyd's algorithm and a std::set.
std::vector<int64_t> NaiveFloyd(const CscGraph& graph, int64_t node, const SampleRequest& r) {
  const int64_t begin = graph.indptr()[node], degree = graph.indptr()[node + 1] - begin;
  std::set<int64_t> picked;
  for (int64_t i = 0; i < r.fanout; ++i) {
    const int64_t j = degree - r.fanout + i;
    const uint64_t bits = OracleDrawBits(r.rng_seed, r.layer, /*tag=*/5, node, i);
    const int64_t t = static_cast<int64_t>((static_cast<unsigned __int128>(bits) * static_cast<uint64_t>(j + 1)) >> 64);
    picked.insert(picked.count(begin + t) ? begin + j : begin + t);
  }
  return std::vector<int64_t>(picked.begin(), picked.end());
}

// Whether the specification samples `node` weighted without replacement by
// rejection (docs/sampling.md): 0 < fanout <= 256, fanout < eligible, and
// fanout * (largest weight) <= total, total the sequential double sum.
bool NaiveUsesRejection(const CscGraph& graph, int64_t node, const SampleRequest& r) {
  const std::vector<int64_t> eligible = EligibleEdges(graph, node, r.weighted);
  if (!r.weighted || r.replace || r.fanout <= 0 || r.fanout > 256) return false;
  if (static_cast<int64_t>(eligible.size()) <= r.fanout) return false;
  double total = 0;
  float largest = 0;
  for (int64_t e = graph.indptr()[node]; e < graph.indptr()[node + 1]; ++e) {
    total += static_cast<double>(graph.weights()[e]);
    largest = std::max(largest, graph.weights()[e]);
  }
  return static_cast<double>(r.fanout) * static_cast<double>(largest) <= total;
}

// Computes weighted picks by rejection straight from the specification:
// draw j (tag 6 on the draw counter) takes column c = the high half of the
// 128-bit bits * d and coin = bits 32..63 of its low half, keeps c when
// the coin is below c's threshold in the graph's alias table, else its
// alias; a repeat is dropped, until fanout distinct edges.
std::vector<int64_t> NaiveRejection(const CscGraph& graph, int64_t node, const SampleRequest& r) {
  const int64_t begin = graph.indptr()[node], d = graph.indptr()[node + 1] - begin;
  std::set<int64_t> picked;
  for (int64_t j = 0; static_cast<int64_t>(picked.size()) < r.fanout; ++j) {
    const uint64_t bits = OracleDrawBits(r.rng_seed, r.layer, /*tag=*/6, node, j);
    const unsigned __int128 product = static_cast<unsigned __int128>(bits) * static_cast<uint64_t>(d);
    const int64_t column = static_cast<int64_t>(product >> 64);
    const uint32_t coin = static_cast<uint32_t>(static_cast<uint64_t>(product) >> 32);
    const uint64_t entry = graph.weight_alias()[begin + column];
    const int64_t pick = begin + (coin < (entry >> 32) ? column : static_cast<int64_t>(entry & 0xffffffffu));
    RC_ASSERT(graph.weights()[pick] > 0.0f);
    picked.insert(pick);
  }
  return std::vector<int64_t>(picked.begin(), picked.end());
}

// Computes picks without replacement the slow way: every key, std::sort by
// (key, edge id), the first k, sorted by edge id. Uses libm's log, which
// agrees with the deterministic log to within rounding: a different pick
// would need two keys within an ulp of each other. Weighted seeds that the
// specification samples by rejection go to NaiveRejection.
std::vector<int64_t> NaiveWithoutReplacement(const CscGraph& graph, int64_t node, const SampleRequest& r) {
  const std::vector<int64_t> eligible = EligibleEdges(graph, node, r.weighted);
  if (r.fanout < 0 || static_cast<int64_t>(eligible.size()) <= r.fanout) return eligible;
  if (!r.weighted && r.fanout <= 256) return NaiveFloyd(graph, node, r);
  if (NaiveUsesRejection(graph, node, r)) return NaiveRejection(graph, node, r);
  std::vector<std::tuple<double, uint64_t, int64_t>> keys;
  for (int64_t e : eligible) {
    if (r.weighted) {
      const uint64_t bits = OracleBits(r.rng_seed, r.layer, /*tag=*/2, e);
      const double u = static_cast<double>((bits >> 11) + 1) * 0x1p-53;
      keys.emplace_back(-std::log(u) / graph.weights()[e], 0, e);
    } else {
      keys.emplace_back(0.0, OracleBits(r.rng_seed, r.layer, /*tag=*/1, e), e);
    }
  }
  std::sort(keys.begin(), keys.end());
  std::vector<int64_t> picks;
  for (int64_t i = 0; i < r.fanout; ++i) picks.push_back(std::get<2>(keys[i]));
  std::sort(picks.begin(), picks.end());
  return picks;
}

// Computes picks with replacement straight from the specification
// (docs/sampling.md, tags 3 and 4 on the draw counters): a uniform draw
// picks b + mulhi64(r, degree); a weighted draw walks the segment's
// sequential double sum to the first positive-weight edge past u * total.
std::vector<int64_t> NaiveWithReplacement(const CscGraph& graph, int64_t node, const SampleRequest& r) {
  const std::vector<int64_t> eligible = EligibleEdges(graph, node, r.weighted);
  if (r.fanout < 0) return eligible;
  std::vector<int64_t> picks;
  if (eligible.empty()) return picks;
  const int64_t begin = graph.indptr()[node], end = graph.indptr()[node + 1];
  for (int64_t j = 0; j < r.fanout; ++j) {
    if (!r.weighted) {
      const uint64_t bits = OracleDrawBits(r.rng_seed, r.layer, /*tag=*/3, node, j);
      const auto degree = static_cast<uint64_t>(end - begin);
      picks.push_back(begin + static_cast<int64_t>((static_cast<unsigned __int128>(bits) * degree) >> 64));
      continue;
    }
    const uint64_t bits = OracleDrawBits(r.rng_seed, r.layer, /*tag=*/4, node, j);
    double total = 0;
    for (int64_t e = begin; e < end; ++e) total += static_cast<double>(graph.weights()[e]);
    const double target = static_cast<double>(bits >> 11) * 0x1p-53 * total;
    double sum = 0;
    int64_t pick = -1, last_positive = -1;
    for (int64_t e = begin; e < end && pick < 0; ++e) {
      sum += static_cast<double>(graph.weights()[e]);
      if (graph.weights()[e] > 0.0f) {
        last_positive = e;
        if (sum > target) pick = e;
      }
    }
    picks.push_back(pick >= 0 ? pick : last_positive);
  }
  return picks;
}

// Asserts that two subgraphs are identical, array by array.
void AssertSameSubgraph(const SampledSubgraph& other, const SampledSubgraph& baseline) {
  RC_ASSERT(other.seeds == baseline.seeds);
  RC_ASSERT(other.indptr == baseline.indptr);
  RC_ASSERT(other.indices == baseline.indices);
  RC_ASSERT(other.original_edge_ids == baseline.original_edge_ids);
}

RC_GTEST_PROP(SamplingProperties, EveryBackendAndThreadCountGivesTheSameResult, ()) {
  const Case c = GenCase();
  const std::vector<std::string> names = BackendNames();
  const SampledSubgraph baseline = Run(names[0], c.request);
  for (size_t b = 1; b < names.size(); ++b) {
    RC_LOG() << "backend " << names[b] << " against " << names[0] << "\n";
    AssertSameSubgraph(Run(names[b], c.request), baseline);
  }
}

// Generates a hub of degree 257..700 (plus a few other nodes) and a fanout
// above 256, so uniform sampling without replacement takes the top-k key
// path instead of Floyd's algorithm; fanouts above the degree take all.
Case GenLargeFanoutCase() {
  const int64_t degree = *rc::gen::inRange<int64_t>(257, 701);
  const int64_t num_nodes = *rc::gen::inRange<int64_t>(2, 20);
  const bool weighted = *rc::gen::arbitrary<bool>();
  std::vector<std::pair<int64_t, int64_t>> edges;
  std::vector<float> edge_weights;
  for (int64_t i = 0; i < degree; ++i) {
    edges.emplace_back(*rc::gen::inRange<int64_t>(0, num_nodes), /*hub=*/0);
    if (weighted) edge_weights.push_back(*GenWeight());
  }
  Result<CscGraph> graph =
      GraphFromEdges(num_nodes, edges, weighted ? std::optional<std::vector<float>>(edge_weights) : std::nullopt);
  RC_ASSERT(graph.ok());
  Case c;
  c.graph = std::make_shared<CscGraph>(std::move(graph).value());
  c.request.graph = c.graph.get();
  c.request.seeds = {0, *rc::gen::inRange<int64_t>(0, num_nodes), 0};
  c.request.fanout = *rc::gen::inRange<int64_t>(257, degree + 8);
  c.request.replace = *rc::gen::weightedOneOf<bool>({{4, rc::gen::just(false)}, {1, rc::gen::just(true)}});
  c.request.weighted = weighted && *rc::gen::arbitrary<bool>();
  c.request.rng_seed = *rc::gen::arbitrary<uint64_t>();
  c.request.layer = *rc::gen::inRange<uint32_t>(0, 4);
  return c;
}

RC_GTEST_PROP(SamplingProperties, FanoutsAbove256GiveTheSameResultOnEveryBackend, ()) {
  const Case c = GenLargeFanoutCase();
  const std::vector<std::string> names = BackendNames();
  const SampledSubgraph baseline = Run(names[0], c.request);
  if (!c.request.replace) RC_ASSERT(PicksOf(baseline, 0) == NaiveWithoutReplacement(*c.graph, 0, c.request));
  for (size_t b = 1; b < names.size(); ++b) {
    RC_LOG() << "backend " << names[b] << " against " << names[0] << "\n";
    AssertSameSubgraph(Run(names[b], c.request), baseline);
  }
}

RC_GTEST_PROP(SamplingProperties, EveryBackendGivesTheSameMultiLayerResult, ()) {
  const Case c = GenCase();
  MultiLayerRequest r;
  r.graph = c.graph.get();
  r.seeds = c.request.seeds;
  // One to three hops, fanouts mostly small (the layers grow fast).
  const size_t num_layers = *rc::gen::inRange<size_t>(1, 4);
  r.fanouts = *rc::gen::container<std::vector<int64_t>>(
      num_layers,
      rc::gen::weightedOneOf<int64_t>({{6, rc::gen::inRange<int64_t>(-1, 6)}, {1, rc::gen::just<int64_t>(40)}}));
  r.replace = c.request.replace;
  r.weighted = c.request.weighted;
  r.rng_seed = c.request.rng_seed;
  // Every hop sized by its bound, every hop waiting for its counts, or a mix.
  r.bounded_hop_words =
      *rc::gen::weightedOneOf<int64_t>({{2, rc::gen::just(DeviceSamplingWorkspace::kDefaultBoundedHopWords)},
                                        {1, rc::gen::just<int64_t>(0)},
                                        {2, rc::gen::inRange<int64_t>(1, 400)}});
  const std::vector<std::string> names = BackendNames();
  Result<std::vector<SampledLayer>> baseline = RunMultiLayerOnBackend(names[0], r);
  if (!baseline.ok()) RC_FAIL(names[0] + " failed: " + baseline.status().ToString());
  RC_ASSERT(baseline->size() == r.fanouts.size());
  // The hops chain: hop 0 starts from the seeds, hop k + 1 from hop k's unique nodes.
  for (size_t k = 0; k < baseline->size(); ++k) {
    const std::vector<int64_t>& expected_seeds = k == 0 ? r.seeds : (*baseline)[k - 1].unique_nodes;
    RC_ASSERT((*baseline)[k].subgraph.seeds == expected_seeds);
  }
  for (size_t b = 1; b < names.size(); ++b) {
    Result<std::vector<SampledLayer>> other = RunMultiLayerOnBackend(names[b], r);
    if (!other.ok()) RC_FAIL(names[b] + " failed: " + other.status().ToString());
    RC_ASSERT(other->size() == baseline->size());
    for (size_t k = 0; k < baseline->size(); ++k) {
      RC_LOG() << "backend " << names[b] << " against " << names[0] << ", layer " << k << "\n";
      AssertSameSubgraph((*other)[k].subgraph, (*baseline)[k].subgraph);
      RC_ASSERT((*other)[k].unique_nodes == (*baseline)[k].unique_nodes);
      RC_ASSERT((*other)[k].compacted_indices == (*baseline)[k].compacted_indices);
    }
  }
}

RC_GTEST_PROP(SamplingProperties, EveryBackendRejectsTheSameBadInput, ()) {
  Case c = GenCase();
  const int problem = *rc::gen::inRange(0, 3);
  if (problem == 0) {
    // A seed outside [0, num_nodes), at a random position.
    const int64_t n = c.graph->num_nodes();
    const int64_t bad = *rc::gen::element<int64_t>(-1, n, n + 1, -1000000007);
    const size_t at = *rc::gen::inRange<size_t>(0, c.request.seeds.size() + 1);
    c.request.seeds.insert(c.request.seeds.begin() + at, bad);
  } else if (problem == 1) {
    c.request.fanout = *rc::gen::element<int64_t>(-2, -3, -1000);
  } else {
    RC_PRE(!c.graph->has_weights());
    c.request.weighted = true;
  }
  const std::vector<std::string> names = BackendNames();
  const Result<SampledSubgraph> baseline = RunOnBackend(names[0], c.request);
  RC_ASSERT(!baseline.ok());
  for (size_t b = 1; b < names.size(); ++b) {
    const Result<SampledSubgraph> other = RunOnBackend(names[b], c.request);
    RC_LOG() << "backend " << names[b] << ": " << other.status() << "\n";
    RC_ASSERT(!other.ok());
    RC_ASSERT(other.status().code() == baseline.status().code());
  }
}

RC_GTEST_PROP(SamplingProperties, EverySampledEdgeExistsInTheSeedSegment, ()) {
  const Case c = GenCase();
  const CscGraph& g = *c.graph;
  for (const std::string& backend : BackendNames()) {
    const SampledSubgraph s = Run(backend, c.request);
    RC_ASSERT(s.seeds == c.request.seeds);
    RC_ASSERT(s.indptr.size() == c.request.seeds.size() + 1);
    RC_ASSERT(s.indptr.front() == 0);
    RC_ASSERT(s.indices.size() == s.original_edge_ids.size());
    RC_ASSERT(static_cast<size_t>(s.indptr.back()) == s.indices.size());
    for (size_t i = 0; i < c.request.seeds.size(); ++i) {
      const int64_t seed = c.request.seeds[i];
      for (int64_t j = s.indptr[i]; j < s.indptr[i + 1]; ++j) {
        const int64_t e = s.original_edge_ids[j];
        RC_ASSERT(e >= g.indptr()[seed]);
        RC_ASSERT(e < g.indptr()[seed + 1]);
        RC_ASSERT(s.indices[j] == g.indices()[e]);
      }
    }
  }
}

RC_GTEST_PROP(SamplingProperties, PickCountsFollowTheSpec, ()) {
  const Case c = GenCase();
  const SampleRequest& r = c.request;
  for (const std::string& backend : BackendNames()) {
    const SampledSubgraph s = Run(backend, r);
    for (size_t i = 0; i < r.seeds.size(); ++i) {
      const int64_t eligible = static_cast<int64_t>(EligibleEdges(*c.graph, r.seeds[i], r.weighted).size());
      const int64_t count = s.indptr[i + 1] - s.indptr[i];
      if (r.fanout == -1) {
        RC_ASSERT(count == eligible);
      } else if (r.replace) {
        RC_ASSERT(count == (eligible > 0 ? r.fanout : 0));
      } else {
        RC_ASSERT(count == std::min(r.fanout, eligible));
      }
    }
  }
}

RC_GTEST_PROP(SamplingProperties, WithoutReplacementPicksDistinctAscendingEdges, ()) {
  Case c = GenCase();
  c.request.replace = false;
  for (const std::string& backend : BackendNames()) {
    const SampledSubgraph s = Run(backend, c.request);
    for (size_t i = 0; i < c.request.seeds.size(); ++i) {
      const std::vector<int64_t> picks = PicksOf(s, i);
      for (size_t j = 1; j < picks.size(); ++j) RC_ASSERT(picks[j - 1] < picks[j]);
    }
  }
}

RC_GTEST_PROP(SamplingProperties, FanoutMinusOneReturnsEveryEligibleEdge, ()) {
  Case c = GenCase();
  c.request.fanout = -1;
  for (const std::string& backend : BackendNames()) {
    const SampledSubgraph s = Run(backend, c.request);
    for (size_t i = 0; i < c.request.seeds.size(); ++i) {
      RC_ASSERT(PicksOf(s, i) == EligibleEdges(*c.graph, c.request.seeds[i], c.request.weighted));
    }
  }
}

RC_GTEST_PROP(SamplingProperties, ZeroWeightEdgesAreNeverPicked, ()) {
  Case c = GenCase(Weights::kAlways);
  c.request.weighted = true;
  for (const std::string& backend : BackendNames()) {
    const SampledSubgraph s = Run(backend, c.request);
    for (int64_t e : s.original_edge_ids) RC_ASSERT(c.graph->weights()[e] > 0.0f);
  }
}

// Asserts every backend's picks of every seed of `c` equal `oracle`'s.
void AssertEveryBackendMatches(const Case& c,
                               std::vector<int64_t> (*oracle)(const CscGraph&, int64_t, const SampleRequest&)) {
  for (const std::string& backend : BackendNames()) {
    const SampledSubgraph s = Run(backend, c.request);
    for (size_t i = 0; i < c.request.seeds.size(); ++i) {
      RC_ASSERT(PicksOf(s, i) == oracle(*c.graph, c.request.seeds[i], c.request));
    }
  }
}

RC_GTEST_PROP(SamplingProperties, TopKMatchesANaiveOracle, ()) {
  Case c = GenCase();
  c.request.replace = false;
  AssertEveryBackendMatches(c, NaiveWithoutReplacement);
}

// Weighted without replacement with small fanouts over spread-out weights:
// the hub mostly takes the rejection path, the other nodes either path.
RC_GTEST_PROP(SamplingProperties, WeightedRejectionMatchesANaiveOracle, ()) {
  Case c = GenCase(Weights::kSpread);
  c.request.replace = false;
  c.request.weighted = true;
  c.request.fanout = *rc::gen::inRange<int64_t>(1, 9);
  bool any_rejection = false;
  for (int64_t seed : c.request.seeds) any_rejection = any_rejection || NaiveUsesRejection(*c.graph, seed, c.request);
  RC_TAG(any_rejection ? "a seed by rejection" : "no seed by rejection");
  AssertEveryBackendMatches(c, NaiveWithoutReplacement);
}

// The with-replacement modes against the specification itself: the CPU
// path runs the same sampling core as the devices, so only an oracle of
// its own can catch a wrong counter (a draw that ignores the layer, say).
RC_GTEST_PROP(SamplingProperties, WithReplacementMatchesANaiveOracle, ()) {
  Case c = GenCase();
  c.request.replace = true;
  AssertEveryBackendMatches(c, NaiveWithReplacement);
}

RC_GTEST_PROP(SamplingProperties, UniqueAndCompactMapsBack, ()) {
  const Case c = GenCase();
  const SampledSubgraph s = Run(BackendNames()[0], c.request);
  const Result<UniqueAndCompactResult> compacted = UniqueAndCompact(s.seeds, s.indices);
  if (!compacted.ok()) RC_FAIL("UniqueAndCompact failed: " + compacted.status().ToString());
  const UniqueAndCompactResult& u = *compacted;
  RC_ASSERT(u.compacted_indices.size() == s.indices.size());
  for (size_t i = 0; i < s.indices.size(); ++i) {
    RC_ASSERT(u.compacted_indices[i] >= 0);
    RC_ASSERT(u.compacted_indices[i] < static_cast<int64_t>(u.unique_nodes.size()));
    RC_ASSERT(u.unique_nodes[u.compacted_indices[i]] == s.indices[i]);
  }
  // Distinct, seeds first in first-occurrence order, then first appearance.
  std::vector<int64_t> expected;
  std::set<int64_t> seen;
  for (int64_t v : s.seeds) {
    if (seen.insert(v).second) expected.push_back(v);
  }
  for (int64_t v : s.indices) {
    if (seen.insert(v).second) expected.push_back(v);
  }
  RC_ASSERT(u.unique_nodes == expected);
}

// Returns the chi-square statistic of observed counts against expected ones.
double ChiSquare(const std::vector<int64_t>& observed, const std::vector<double>& expected) {
  double chi2 = 0;
  for (size_t i = 0; i < observed.size(); ++i) {
    const double d = static_cast<double>(observed[i]) - expected[i];
    chi2 += d * d / expected[i];
  }
  return chi2;
}

// Counts how often each edge of the star's centre is picked over
// `trials` rng seeds.
std::vector<int64_t> CountPicks(const CscGraph& star, int64_t fanout, bool replace, bool weighted, int trials) {
  std::vector<int64_t> counts(star.num_edges(), 0);
  SampleRequest r;
  r.graph = &star;
  r.seeds = {0};
  r.fanout = fanout;
  r.replace = replace;
  r.weighted = weighted;
  for (int t = 0; t < trials; ++t) {
    r.rng_seed = 1000003ULL * t + 17;
    Result<SampledSubgraph> s = RunOnBackend(BackendNames()[0], r);
    if (!s.ok()) {
      ADD_FAILURE() << s.status();
      continue;
    }
    for (int64_t e : s->original_edge_ids) ++counts[e];
  }
  return counts;
}

// Thresholds: the 99.9% quantiles of chi-square with 19 and 3 degrees of
// freedom are 43.8 and 16.3; the seeds are fixed, so the checks are stable.
TEST(SamplingDistribution, UniformWithoutReplacementIsUniform) {
  Result<CscGraph> star = MakeStar(20);
  const std::vector<int64_t> counts = CountPicks(*star, 5, false, false, 4000);
  EXPECT_LT(ChiSquare(counts, std::vector<double>(20, 4000.0 * 5 / 20)), 43.8);
}

TEST(SamplingDistribution, UniformWithReplacementIsUniform) {
  Result<CscGraph> star = MakeStar(20);
  const std::vector<int64_t> counts = CountPicks(*star, 10, true, false, 2000);
  EXPECT_LT(ChiSquare(counts, std::vector<double>(20, 2000.0 * 10 / 20)), 43.8);
}

TEST(SamplingDistribution, WeightedPicksFollowTheWeights) {
  Result<CscGraph> star = MakeStar(5, std::vector<float>{1, 2, 0, 3, 4});
  const std::vector<double> share = {0.1, 0.2, 0.3, 0.4};
  for (bool replace : {false, true}) {
    // Without replacement and fanout 1, Efraimidis-Spirakis picks edge e with
    // probability w_e / sum(w); with replacement every draw does.
    const int64_t fanout = replace ? 4 : 1;
    const int trials = replace ? 5000 : 20000;
    std::vector<int64_t> counts = CountPicks(*star, fanout, replace, true, trials);
    EXPECT_EQ(counts[2], 0);
    counts.erase(counts.begin() + 2);
    std::vector<double> expected;
    for (double p : share) expected.push_back(p * trials * fanout);
    EXPECT_LT(ChiSquare(counts, expected), 16.3) << "replace=" << replace;
  }
}

// Returns the probability that successive sampling (each draw proportional
// to weight among the edges not drawn yet) draws exactly the edges of
// `subset` in its next popcount(subset) draws, `drawn` the weight already
// drawn: the sum over the orderings of the subset, enumerated.
double SuccessiveSubsetProbability(const std::vector<double>& w, double total, uint32_t subset, double drawn) {
  if (subset == 0) return 1.0;
  double p = 0;
  for (size_t e = 0; e < w.size(); ++e) {
    if (subset & (1u << e)) {
      p += w[e] / (total - drawn) * SuccessiveSubsetProbability(w, total, subset & ~(1u << e), drawn + w[e]);
    }
  }
  return p;
}

// The 99.9 % quantile of chi-square with `df` degrees of freedom
// (Wilson-Hilferty; within 1 % of the exact value for df >= 3).
double ChiSquareQuantile999(int df) {
  const double a = 2.0 / (9.0 * df);
  const double c = 1.0 - a + 3.0902 * std::sqrt(a);
  return df * c * c * c;
}

// Samples the centre of a star with `weights` `trials` times (fixed rng
// seeds) with `fanout` picks without replacement, and compares (1) the
// k-subsets drawn, a multinomial over every k-subset of the positive
// edges, and (2) each edge's inclusion count, with the exact probabilities
// of successive sampling. Checks first which path the specification takes
// for the star, so that both paths are tested.
void ExpectSuccessiveSampling(const std::vector<float>& weights, int64_t fanout, bool rejection, int trials) {
  Result<CscGraph> star = MakeStar(static_cast<int64_t>(weights.size()), weights);
  FL_ASSERT_OK(star);
  SampleRequest r;
  r.graph = &*star;
  r.seeds = {0};
  r.fanout = fanout;
  r.weighted = true;
  ASSERT_EQ(NaiveUsesRejection(*star, 0, r), rejection);
  const int n = static_cast<int>(weights.size());
  std::vector<double> w(weights.begin(), weights.end());
  double total = 0;
  for (double x : w) total += x;
  // Every k-subset of the positive edges and its probability.
  std::vector<uint32_t> subsets;
  std::vector<double> subset_p, inclusion(n, 0.0);
  for (uint32_t mask = 0; mask < (1u << n); ++mask) {
    if (__builtin_popcount(mask) != fanout) continue;
    bool positive = true;
    for (int e = 0; e < n; ++e) positive = positive && (!(mask & (1u << e)) || w[e] > 0);
    if (!positive) continue;
    subsets.push_back(mask);
    subset_p.push_back(SuccessiveSubsetProbability(w, total, mask, 0.0));
    for (int e = 0; e < n; ++e) {
      if (mask & (1u << e)) inclusion[e] += subset_p.back();
    }
  }
  std::vector<int64_t> subset_counts(subsets.size(), 0), edge_counts(n, 0);
  int64_t malformed = 0;  // not fanout distinct positive edges
  for (int t = 0; t < trials; ++t) {
    r.rng_seed = 7919ULL * t + 3;
    Result<SampledSubgraph> s = RunOnBackend(BackendNames()[0], r);
    FL_ASSERT_OK(s);
    uint32_t mask = 0;
    for (int64_t e : s->original_edge_ids) {
      ++edge_counts[e];
      mask |= 1u << e;
    }
    const auto it = std::find(subsets.begin(), subsets.end(), mask);
    if (it == subsets.end() || static_cast<int64_t>(s->original_edge_ids.size()) != fanout) {
      ++malformed;
    } else {
      ++subset_counts[it - subsets.begin()];
    }
  }
  EXPECT_EQ(malformed, 0);
  std::vector<double> expected_subsets, expected_edges;
  for (double p : subset_p) {
    expected_subsets.push_back(p * trials);
    ASSERT_GE(p * trials, 5.0) << "too few trials for a chi-square test";
  }
  std::vector<int64_t> positive_counts;
  for (int e = 0; e < n; ++e) {
    if (w[e] > 0) {
      positive_counts.push_back(edge_counts[e]);
      expected_edges.push_back(inclusion[e] * trials);
    } else {
      EXPECT_EQ(edge_counts[e], 0) << "zero-weight edge " << e << " picked";
    }
  }
  const int df_subsets = static_cast<int>(subsets.size()) - 1;
  EXPECT_LT(ChiSquare(subset_counts, expected_subsets), ChiSquareQuantile999(df_subsets))
      << "subsets, fanout " << fanout;
  // The inclusion statistic has mean (edges - fanout) under successive
  // sampling: chi-square's quantile with edges - 1 degrees is the bound.
  EXPECT_LT(ChiSquare(positive_counts, expected_edges),
            ChiSquareQuantile999(static_cast<int>(positive_counts.size()) - 1))
      << "inclusions, fanout " << fanout;
}

// The rejection path (fanout * largest weight <= total) and the key
// path (one weight dominates, or fanout close to the eligible count) draw
// from the same distribution. A uniform sampler, or one that draws
// proportionally to weight with replacement, fails these (docs/sampling.md).
TEST(SamplingDistribution, WeightedRejectionIsSuccessiveSampling) {
  ExpectSuccessiveSampling({1, 0, 1, 2, 2, 3, 3, 4, 4}, 2, /*rejection=*/true, 20000);
  ExpectSuccessiveSampling({1, 2, 3, 4, 5, 5, 4, 3, 2, 1}, 3, /*rejection=*/true, 40000);
  ExpectSuccessiveSampling({4, 4, 4, 4, 4, 4}, 3, /*rejection=*/true, 10000);
}

TEST(SamplingDistribution, WeightedKeysAreSuccessiveSampling) {
  ExpectSuccessiveSampling({8, 1, 1, 0, 1, 1, 2}, 2, /*rejection=*/false, 20000);
  ExpectSuccessiveSampling({1, 0, 1, 2, 2, 3, 3, 4, 4}, 6, /*rejection=*/false, 40000);
}

}  // namespace
}  // namespace properties
}  // namespace faultline
