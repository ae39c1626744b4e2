// Provides the unique_and_compact kernels. Positions run over the seeds and
// then the sampled indices; a node's first position decides its order, so
// the unique nodes come out seeds first, then new nodes in first-appearance
// order — the same as the CPU reference, whatever the thread schedule:
// 0. ClearTable: frees the slots the live positions use (NodeTable::For).
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

// The leading zero bits of x (x > 0).
FL_HOST_DEVICE FL_INLINE int LeadingZeros(uint64_t x) {
#if defined(__CUDA_ARCH__)
  return __clzll(static_cast<long long>(x));
#else
  return __builtin_clzll(x);
#endif
}

// The node table: `capacity` (a power of two, at least twice the number of
// positions) slots of key, first position and new id. Node ids are >= 0, so
// kEmptySlot (all ones) marks a free slot.
struct NodeTable {
  unsigned long long* keys;
  unsigned long long* first_position;
  int64_t* new_id;
  uint64_t capacity;

  // The table the kernels use for `positions` live positions: its first
  // slots, the smallest power of two at least twice their number, or all
  // of them. Every kernel of one compaction reads the same live counts, so
  // all use the same slots; where the host launched over a bound of the
  // counts, only these are cleared and probed.
  // (Every thread of every kernel works it out: a count of leading zeros,
  // not a loop, since a bound may launch millions of threads.)
  FL_HOST_DEVICE FL_INLINE NodeTable For(int64_t positions) const {
    const uint64_t need = 2 * static_cast<uint64_t>(positions);
    if (need >= capacity) return *this;
    return NodeTable{keys, first_position, new_id, need <= 1 ? 1 : uint64_t{1} << (64 - LeadingZeros(need - 1))};
  }

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

// The node at position p of [seeds..., indices...]. A count the device
// wrote may say how many of each array's words are nodes (the host launched
// over a bound of it without waiting to read it); the positions past a
// count hold no node, and the kernels skip them, so that the unique nodes
// and their order are those of the live words alone.
struct Positions {
  const int64_t* seeds;
  int64_t num_seeds;
  const int64_t* indices;
  int64_t num_indices;
  const int64_t* live_seeds = nullptr;    // at most num_seeds; all when null
  const int64_t* live_indices = nullptr;  // at most num_indices; all when null

  // The live words of each array, read once per thread.
  struct Live {
    int64_t seeds, indices;
  };
  FL_HOST_DEVICE FL_INLINE Live ReadLive() const {
    return Live{live_seeds != nullptr ? *live_seeds : num_seeds, live_indices != nullptr ? *live_indices : num_indices};
  }
  FL_HOST_DEVICE FL_INLINE int64_t size() const { return num_seeds + num_indices; }
  FL_HOST_DEVICE FL_INLINE bool Holds(const Live& live, int64_t p) const {
    return p < num_seeds ? p < live.seeds : p - num_seeds < live.indices;
  }
  FL_HOST_DEVICE FL_INLINE int64_t NodeAt(int64_t p) const { return p < num_seeds ? seeds[p] : indices[p - num_seeds]; }
};

// Frees the slots of table.For(the live positions): key and first
// position kEmptySlot (the new ids are written before they are read).
struct ClearTableKernel {
  Positions positions;
  NodeTable table;
  FL_HOST_DEVICE void operator()(const ThreadIndex& t) const {
    const Positions::Live live = positions.ReadLive();
    const uint64_t slots = table.For(live.seeds + live.indices).capacity;
    for (uint64_t slot = t.global(); slot < slots; slot += t.stride()) {
      table.keys[slot] = kEmptySlot;
      table.first_position[slot] = kEmptySlot;
    }
  }
};

struct InsertNodesKernel {
  Positions positions;
  NodeTable table;
  FL_HOST_DEVICE void operator()(const ThreadIndex& t) const {
    const Positions::Live live = positions.ReadLive();
    const NodeTable used = table.For(live.seeds + live.indices);
    for (uint64_t p = t.global(); p < static_cast<uint64_t>(positions.size()); p += t.stride()) {
      if (!positions.Holds(live, static_cast<int64_t>(p))) continue;
      const uint64_t slot = used.Insert(positions.NodeAt(static_cast<int64_t>(p)));
      AtomicMin(&used.first_position[slot], p);
    }
  }
};

// Also zeroes word positions.size() of is_first, which the ranks' exclusive
// sum reads (as SampleCountKernel zeroes its counts' last word). A position
// that holds no node is not a first one.
struct MarkFirstKernel {
  Positions positions;
  NodeTable table;
  int64_t* is_first;
  FL_HOST_DEVICE void operator()(const ThreadIndex& t) const {
    if (t.global() == 0) is_first[positions.size()] = 0;
    const Positions::Live live = positions.ReadLive();
    const NodeTable used = table.For(live.seeds + live.indices);
    for (uint64_t p = t.global(); p < static_cast<uint64_t>(positions.size()); p += t.stride()) {
      if (!positions.Holds(live, static_cast<int64_t>(p))) {
        is_first[p] = 0;
        continue;
      }
      const uint64_t slot = used.Find(positions.NodeAt(static_cast<int64_t>(p)));
      is_first[p] = used.first_position[slot] == p ? 1 : 0;
    }
  }
};

// Also copies the unique nodes' count (the ranks' total) into
// *unique_count when it is not null: a word of the caller's that outlives
// the ranks, which the next compaction overwrites.
struct EmitUniqueKernel {
  Positions positions;
  NodeTable table;
  const int64_t* is_first;
  const int64_t* rank;
  int64_t* unique_nodes;
  int64_t* unique_count = nullptr;
  FL_HOST_DEVICE void operator()(const ThreadIndex& t) const {
    if (t.global() == 0 && unique_count != nullptr) *unique_count = rank[positions.size()];
    const Positions::Live live = positions.ReadLive();
    const NodeTable used = table.For(live.seeds + live.indices);
    for (uint64_t p = t.global(); p < static_cast<uint64_t>(positions.size()); p += t.stride()) {
      if (!is_first[p]) continue;
      const int64_t node = positions.NodeAt(static_cast<int64_t>(p));
      unique_nodes[rank[p]] = node;
      used.new_id[used.Find(node)] = rank[p];
    }
  }
};

// Relabels the live indices of `positions` (the positions after its seeds).
struct RelabelKernel {
  Positions positions;
  NodeTable table;
  int64_t* compacted;
  FL_HOST_DEVICE void operator()(const ThreadIndex& t) const {
    const Positions::Live live = positions.ReadLive();
    const NodeTable used = table.For(live.seeds + live.indices);
    for (uint64_t i = t.global(); i < static_cast<uint64_t>(live.indices); i += t.stride()) {
      compacted[i] = used.new_id[used.Find(positions.indices[i])];
    }
  }
};

int LaunchClearTableOnCuda(const ClearTableKernel& kernel, const LaunchConfig& config);
int LaunchInsertNodesOnCuda(const InsertNodesKernel& kernel, const LaunchConfig& config);
int LaunchMarkFirstOnCuda(const MarkFirstKernel& kernel, const LaunchConfig& config);
int LaunchEmitUniqueOnCuda(const EmitUniqueKernel& kernel, const LaunchConfig& config);
int LaunchRelabelOnCuda(const RelabelKernel& kernel, const LaunchConfig& config);

}  // namespace kernels
}  // namespace faultline

#endif  // FAULTLINE_KERNELS_COMPACT_KERNELS_CUH_
