// Implements BuildWeightTable: Vose's construction of Walker's alias tables,
// in the exact order docs/sampling.md gives, and the rejection rule per node.
#include "kernels/weight_table.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <system_error>
#include <thread>

#include "kernels/sampling_core.h"

namespace faultline {
namespace kernels {
namespace sampling {
namespace {

constexpr uint64_t kLargestThreshold = 0xffffffffu;
// A thread builds at least this many edges' columns (a thread's start costs
// about what a few thousand edges do).
constexpr int64_t kEdgesPerThread = int64_t{1} << 20;

// The column's own share scaled to [0, 2^32): floor(q * 2^32) for q in [0, 1).
uint64_t Threshold(double q) {
  if (q <= 0.0) return 0;
  if (q >= 1.0) return kLargestThreshold;
  return static_cast<uint64_t>(q * 0x1p32);  // exact scaling; q < 1 keeps it below 2^32
}

uint64_t Entry(uint64_t threshold, int64_t alias) { return (threshold << 32) | static_cast<uint64_t>(alias); }

// The largest f <= min(kMaxRejectionFanout, eligible - 1) with
// Mul(f, largest) <= total: the rule is monotone in f.
int32_t RejectionFanout(int64_t eligible, float largest, double total) {
  if (!(total > 0.0) || eligible < 2) return 0;
  const int64_t cap = std::min<int64_t>(kMaxRejectionFanout, eligible - 1);
  int64_t f =
      static_cast<int64_t>(std::min(static_cast<double>(cap), std::floor(total / static_cast<double>(largest))));
  while (f > 0 && Mul(static_cast<double>(f), static_cast<double>(largest)) > total) --f;
  while (f < cap && Mul(static_cast<double>(f + 1), static_cast<double>(largest)) <= total) ++f;
  return static_cast<int32_t>(f);
}

// Vose's method over one segment of d >= 1 weights with total > 0. `q` and
// `work` have room for d entries: the scaled weights, and the two worklists
// (small from the front, large from the back).
void BuildSegment(const float* w, int64_t d, double total, uint64_t* out, double* q, uint32_t* work) {
  int64_t small = 0, large = d;
  int64_t heaviest = 0;
  for (int64_t i = 0; i < d; ++i) {
    q[i] = Div(Mul(static_cast<double>(w[i]), static_cast<double>(d)), total);
    if (q[i] < 1.0) {
      work[small++] = static_cast<uint32_t>(i);
    } else {
      work[--large] = static_cast<uint32_t>(i);
    }
    if (w[i] > w[heaviest]) heaviest = i;
  }
  while (small > 0 && large < d) {
    const uint32_t s = work[--small];
    const uint32_t l = work[large];
    out[s] = Entry(Threshold(q[s]), l);
    q[l] = Add(Add(q[l], q[s]), -1.0);
    if (q[l] < 1.0) {
      ++large;
      work[small++] = l;
    }
  }
  // What rounding leaves over keeps its column whole, except a zero weight:
  // that one always moves on to the heaviest edge.
  for (int64_t k = large; k < d; ++k) out[work[k]] = Entry(kLargestThreshold, work[k]);
  for (int64_t k = 0; k < small; ++k) {
    const uint32_t i = work[k];
    out[i] = w[i] > 0.0f ? Entry(kLargestThreshold, i) : Entry(0, heaviest);
  }
}

// The table of nodes [first, last): each node's entries depend on its
// segment alone, so ranges can be built apart.
void BuildNodes(const std::vector<int64_t>& indptr, const std::vector<float>& weights, int64_t first, int64_t last,
                uint64_t* alias, int32_t* rejection_fanouts) {
  std::fill(alias + indptr[first], alias + indptr[last], uint64_t{0});
  std::vector<double> q;
  std::vector<uint32_t> work;
  for (int64_t v = first; v < last; ++v) {
    rejection_fanouts[v] = 0;
    const int64_t begin = indptr[v], d = indptr[v + 1] - begin;
    if (d == 0 || d > int64_t{0xffffffff}) continue;  // no alias column fits 32 bits: keys only
    double total = 0.0;
    float largest = 0.0f;
    int64_t eligible = 0;
    for (int64_t e = begin; e < begin + d; ++e) {
      total = Add(total, static_cast<double>(weights[e]));
      largest = std::max(largest, weights[e]);
      eligible += weights[e] > 0.0f ? 1 : 0;
    }
    rejection_fanouts[v] = RejectionFanout(eligible, largest, total);
    if (rejection_fanouts[v] == 0) continue;  // never drawn from
    if (static_cast<int64_t>(q.size()) < d) {
      q.resize(d);
      work.resize(d);
    }
    BuildSegment(weights.data() + begin, d, total, alias + begin, q.data(), work.data());
  }
}

}  // namespace

void BuildWeightTable(const std::vector<int64_t>& indptr, const std::vector<float>& weights, uint64_t* alias,
                      int32_t* rejection_fanouts, int num_threads) {
  const int64_t num_nodes = static_cast<int64_t>(indptr.size()) - 1;
  if (num_nodes <= 0) return;
  const int64_t num_edges = indptr.back();
  // Small graphs (most tests, a worker's slice) start no thread.
  const int threads = num_edges < kEdgesPerThread
                          ? 1
                          : static_cast<int>(std::clamp<int64_t>(num_threads, 1, num_edges / kEdgesPerThread));
  if (threads == 1) return BuildNodes(indptr, weights, 0, num_nodes, alias, rejection_fanouts);
  // Ranges of nodes with about as many edges each: range t starts at the
  // node whose segment holds edge t * num_edges / threads.
  std::vector<int64_t> bounds = {0};
  for (int t = 1; t < threads; ++t) {
    const int64_t edge = num_edges / threads * t;
    const int64_t node = std::upper_bound(indptr.begin(), indptr.end(), edge) - indptr.begin() - 1;
    bounds.push_back(std::max(bounds.back(), node));
  }
  bounds.push_back(num_nodes);
  std::vector<std::exception_ptr> failed(threads);
  auto build_range = [&](int t) {
    try {
      BuildNodes(indptr, weights, bounds[t], bounds[t + 1], alias, rejection_fanouts);
    } catch (...) {
      failed[t] = std::current_exception();  // std::bad_alloc: rethrown below
    }
  };
  std::vector<std::thread> workers;
  for (int t = 1; t < threads; ++t) {
    try {
      workers.emplace_back(build_range, t);
    } catch (const std::system_error&) {
      build_range(t);  // no thread to be had: this one builds the range
    }
  }
  build_range(0);
  for (std::thread& worker : workers) worker.join();
  for (const std::exception_ptr& e : failed) {
    if (e) std::rethrow_exception(e);
  }
}

WeightTable BuildWeightTable(const std::vector<int64_t>& indptr, const std::vector<float>& weights) {
  WeightTable table;
  table.alias.resize(weights.size());
  table.rejection_fanouts.resize(indptr.empty() ? 0 : indptr.size() - 1);
  BuildWeightTable(indptr, weights, table.alias.data(), table.rejection_fanouts.data());
  return table;
}

}  // namespace sampling
}  // namespace kernels
}  // namespace faultline
