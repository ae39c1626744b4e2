// Implements BuildWeightTable: Vose's construction of Walker's alias tables,
// in the exact order docs/sampling.md gives, and the rejection rule per node.
#include "kernels/weight_table.h"

#include <algorithm>
#include <cmath>

#include "kernels/sampling_core.h"

namespace faultline {
namespace kernels {
namespace sampling {
namespace {

constexpr uint64_t kLargestThreshold = 0xffffffffu;

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

}  // namespace

void BuildWeightTable(const std::vector<int64_t>& indptr, const std::vector<float>& weights, uint64_t* alias,
                      int32_t* rejection_fanouts) {
  const int64_t num_nodes = static_cast<int64_t>(indptr.size()) - 1;
  std::fill(alias, alias + weights.size(), uint64_t{0});
  std::vector<double> q;
  std::vector<uint32_t> work;
  for (int64_t v = 0; v < num_nodes; ++v) {
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
