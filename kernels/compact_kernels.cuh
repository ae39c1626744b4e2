// Provides the unique_and_compact kernels. Positions run over the seeds and
// then the sampled indices; a node's first position decides its order, so
// the unique nodes come out seeds first, then new nodes in first-appearance
// order — the same as the CPU reference, whatever the thread schedule:
// 1. InsertNodes: an open-addressing table keyed by node keeps each node's
//    smallest position (atomic CAS to claim a slot, atomic min on position).
// 2. MarkFirst: is_first[p] = whether p is its node's smallest position.
// 3. rank = exclusive prefix sum of is_first (kernels/scan, on the device;
//    only the total is read back, to size the unique nodes).
// 4. EmitUnique: unique_nodes[rank[p]] = node for first positions, and the
//    table slot records the node's new id.
// 5. Relabel: compacted[i] = new id of indices[i].
#ifndef FAULTLINE_KERNELS_COMPACT_KERNELS_CUH_
#define FAULTLINE_KERNELS_COMPACT_KERNELS_CUH_

#include "kernels/kernel_api.h"

namespace faultline {
namespace kernels {

constexpr unsigned long long kEmptySlot = ~0ull;

// The node table: `capacity` (a power of two, at least twice the number of
// positions) slots of key, first position and new id. Node ids are >= 0, so
// kEmptySlot (all ones) marks a free slot.
struct NodeTable {
  unsigned long long* keys;
  unsigned long long* first_position;
  int64_t* new_id;
  uint64_t capacity;

  FL_HOST_DEVICE FL_INLINE uint64_t Hash(int64_t node) const {
    uint64_t x = static_cast<uint64_t>(node) * 0x9E3779B97F4A7C15ull;
    return (x ^ (x >> 29)) & (capacity - 1);
  }
  // Returns the slot of `node`, claiming a free one if needed.
  FL_HOST_DEVICE FL_INLINE uint64_t Insert(int64_t node) const {
    uint64_t slot = Hash(node);
    for (;;) {
      const unsigned long long prev = AtomicCas(&keys[slot], kEmptySlot, static_cast<unsigned long long>(node));
      if (prev == kEmptySlot || prev == static_cast<unsigned long long>(node)) return slot;
      slot = (slot + 1) & (capacity - 1);
    }
  }
  // Returns the slot of a node that was inserted.
  FL_HOST_DEVICE FL_INLINE uint64_t Find(int64_t node) const {
    uint64_t slot = Hash(node);
    while (keys[slot] != static_cast<unsigned long long>(node)) slot = (slot + 1) & (capacity - 1);
    return slot;
  }
};

// The node at position p of [seeds..., indices...].
struct Positions {
  const int64_t* seeds;
  int64_t num_seeds;
  const int64_t* indices;
  int64_t num_indices;

  FL_HOST_DEVICE FL_INLINE int64_t size() const { return num_seeds + num_indices; }
  FL_HOST_DEVICE FL_INLINE int64_t NodeAt(int64_t p) const { return p < num_seeds ? seeds[p] : indices[p - num_seeds]; }
};

struct InsertNodesKernel {
  Positions positions;
  NodeTable table;
  FL_HOST_DEVICE void operator()(const ThreadIndex& t) const {
    for (uint64_t p = t.global(); p < static_cast<uint64_t>(positions.size()); p += t.stride()) {
      const uint64_t slot = table.Insert(positions.NodeAt(static_cast<int64_t>(p)));
      AtomicMin(&table.first_position[slot], p);
    }
  }
};

// Also zeroes word positions.size() of is_first, which the ranks' exclusive
// sum reads (as SampleCountKernel zeroes its counts' last word).
struct MarkFirstKernel {
  Positions positions;
  NodeTable table;
  int64_t* is_first;
  FL_HOST_DEVICE void operator()(const ThreadIndex& t) const {
    if (t.global() == 0) is_first[positions.size()] = 0;
    for (uint64_t p = t.global(); p < static_cast<uint64_t>(positions.size()); p += t.stride()) {
      const uint64_t slot = table.Find(positions.NodeAt(static_cast<int64_t>(p)));
      is_first[p] = table.first_position[slot] == p ? 1 : 0;
    }
  }
};

struct EmitUniqueKernel {
  Positions positions;
  NodeTable table;
  const int64_t* is_first;
  const int64_t* rank;
  int64_t* unique_nodes;
  FL_HOST_DEVICE void operator()(const ThreadIndex& t) const {
    for (uint64_t p = t.global(); p < static_cast<uint64_t>(positions.size()); p += t.stride()) {
      if (!is_first[p]) continue;
      const int64_t node = positions.NodeAt(static_cast<int64_t>(p));
      unique_nodes[rank[p]] = node;
      table.new_id[table.Find(node)] = rank[p];
    }
  }
};

struct RelabelKernel {
  NodeTable table;
  const int64_t* indices;
  int64_t num_indices;
  int64_t* compacted;
  FL_HOST_DEVICE void operator()(const ThreadIndex& t) const {
    for (uint64_t i = t.global(); i < static_cast<uint64_t>(num_indices); i += t.stride()) {
      compacted[i] = table.new_id[table.Find(indices[i])];
    }
  }
};

int LaunchInsertNodesOnCuda(const InsertNodesKernel& kernel, const LaunchConfig& config);
int LaunchMarkFirstOnCuda(const MarkFirstKernel& kernel, const LaunchConfig& config);
int LaunchEmitUniqueOnCuda(const EmitUniqueKernel& kernel, const LaunchConfig& config);
int LaunchRelabelOnCuda(const RelabelKernel& kernel, const LaunchConfig& config);

}  // namespace kernels
}  // namespace faultline

#endif  // FAULTLINE_KERNELS_COMPACT_KERNELS_CUH_
