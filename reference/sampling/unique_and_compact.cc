// Implements UniqueAndCompact with a table from node id to position, the hot
// random access of every layer, in one of two forms:
//
// - DirectTable, when the ids are non-negative and either all below 2^22 or
//   dense (the largest below 16 times the number of ids): one 8-byte
//   entry per possible id, indexed by the id itself (no hashing, no probing),
//   stamped with the call's generation so that it is cleared only when the
//   32-bit generation wraps; a large table is advised onto 2 MiB pages
//   (best effort: fewer TLB misses per lookup). Graph generators and
//   partitioners put the hubs at nearby (low) ids, so the entries read most
//   often share cache lines; a hash spreads them out.
// - PositionTable otherwise: open addressing (linear probing over a
//   power-of-two table at most half full), 8-byte slots when every id and
//   position fits in 32 bits, sized for half of the indices being new and
//   doubled when half full.
//
// Either way each thread reuses its table's memory from call to call (no
// page faults) and nothing is allocated per node. The DirectTable's calls
// also write the unique nodes through a buffer the thread reuses, without a
// branch per id (CompactDirect).
#include "reference/sampling/unique_and_compact.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "reference/base/huge_pages.h"

namespace faultline {
namespace {

// A 64-bit mix (splitmix64's finalizer) so clustered ids spread out.
inline uint64_t Mix(uint64_t h) {
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

// Slot = (position + 1) << 32 | id, 0 when empty: ids in [0, 2^32), fewer
// than 2^32 - 1 positions.
struct NarrowSlots {
  using Slot = uint64_t;
  static bool Empty(Slot s) { return s == 0; }
  static bool Holds(Slot s, int64_t node) { return static_cast<uint32_t>(s) == static_cast<uint64_t>(node); }
  static int64_t Position(Slot s) { return static_cast<int64_t>(s >> 32) - 1; }
  static int64_t Node(Slot s) { return static_cast<int64_t>(static_cast<uint32_t>(s)); }
  static Slot Make(int64_t node, int64_t position) {
    return (static_cast<uint64_t>(position + 1) << 32) | static_cast<uint64_t>(node);
  }
};

// Any int64 id: the id and position side by side, position -1 when empty.
struct WideSlots {
  struct Slot {
    int64_t node;
    int64_t position;
  };
  static bool Empty(const Slot& s) { return s.position < 0; }
  static bool Holds(const Slot& s, int64_t node) { return s.node == node; }
  static int64_t Position(const Slot& s) { return s.position; }
  static int64_t Node(const Slot& s) { return s.node; }
  static Slot Make(int64_t node, int64_t position) { return Slot{node, position}; }
};

// Maps node ids to their first position; positions are handed out 0, 1, ...
template <typename Slots>
class PositionTable {
 public:
  using Slot = typename Slots::Slot;

  PositionTable(std::vector<Slot>* memory, size_t expected) : slots_(*memory) { Reset(RoundUp(2 * expected)); }

  // Fetches the home slot of a node looked up soon (the table is larger
  // than the CPU's nearer caches; the lookups are independent).
  void Prefetch(int64_t node) const { __builtin_prefetch(&slots_[Mix(static_cast<uint64_t>(node)) & mask_]); }

  // Returns the position of `node`, giving it the next one when it is new.
  int64_t FindOrInsert(int64_t node, bool* inserted) {
    for (size_t slot = Mix(static_cast<uint64_t>(node)) & mask_;; slot = (slot + 1) & mask_) {
      const Slot s = slots_[slot];
      if (Slots::Empty(s)) {
        slots_[slot] = Slots::Make(node, size_);
        *inserted = true;
        if (2 * static_cast<size_t>(++size_) > mask_ + 1) Grow();
        return size_ - 1;
      }
      if (Slots::Holds(s, node)) {
        *inserted = false;
        return Slots::Position(s);
      }
    }
  }

 private:
  static size_t RoundUp(size_t n) {
    size_t capacity = 16;
    while (capacity < n) capacity *= 2;
    return capacity;
  }

  // Empties the first `capacity` slots of the reused memory.
  void Reset(size_t capacity) {
    if (slots_.size() < capacity) slots_.resize(capacity);
    std::fill(slots_.begin(), slots_.begin() + static_cast<std::ptrdiff_t>(capacity), Slots::Make(0, -1));
    mask_ = capacity - 1;
  }

  void Grow() {
    std::vector<Slot> old(slots_.begin(), slots_.begin() + static_cast<std::ptrdiff_t>(mask_ + 1));
    Reset(2 * (mask_ + 1));
    for (const Slot& s : old) {
      if (Slots::Empty(s)) continue;
      size_t slot = Mix(static_cast<uint64_t>(Slots::Node(s))) & mask_;
      while (!Slots::Empty(slots_[slot])) slot = (slot + 1) & mask_;
      slots_[slot] = s;
    }
  }

  std::vector<Slot>& slots_;
  size_t mask_ = 0;
  int64_t size_ = 0;
};

// Direct when the ids are dense (at most kDirectIdsPerInput entries per id in
// the call) or all below kDirectAlways, whatever the call's size (the table,
// rounded up to a power of two, is then at most 32 MiB). A sampled layer's
// ids are node ids of its graph, so the table is at most twice the graph's
// indptr.
constexpr uint64_t kDirectIdsPerInput = 16, kDirectAlways = uint64_t{1} << 22;

// This thread's DirectTable memory and the generation of its last call.
thread_local std::vector<uint64_t> t_direct_entries;
thread_local uint32_t t_direct_generation = 0;

// Maps ids in [0, ids) to positions through entry[id] = generation << 32 |
// position. An entry of an older call (another generation) reads as absent,
// so the memory is cleared only when the 32-bit generation wraps.
class DirectTable {
 public:
  explicit DirectTable(size_t ids) : entries_(t_direct_entries) {
    if (++t_direct_generation == 0) {  // wrapped: stamps of 2^32 calls ago would match again
      std::fill(entries_.begin(), entries_.end(), 0);
      t_direct_generation = 1;
    }
    if (entries_.size() < ids) Grow(ids);
    stamp_ = static_cast<uint64_t>(t_direct_generation) << 32;
  }

  void Prefetch(int64_t node) const { __builtin_prefetch(&entries_[static_cast<size_t>(node)]); }

  // FindOrInsert without a branch on whether the node is new (about every
  // other lookup of a sampled layer is, at random): returns its position,
  // and the count of positions handed out grows by one if it was new.
  int64_t Position(int64_t node) {
    uint64_t& entry = entries_[static_cast<size_t>(node)];
    const uint64_t seen = entry;
    const bool present = (seen & ~uint64_t{0xffffffff}) == stamp_;
    const int64_t position = present ? static_cast<int64_t>(seen & 0xffffffff) : size_;
    entry = stamp_ | static_cast<uint64_t>(position);
    size_ += present ? 0 : 1;
    return position;
  }
  int64_t size() const { return size_; }

 private:
  // Fresh zeroed memory carries generation 0 (absent everywhere), so a
  // larger table need not keep the old entries (freed first). A power of
  // two, so the largest id creeping up over calls does not clear a new
  // table each time; advised onto 2 MiB pages, because the lookups are
  // random over up to tens of MiB, which on 4 KiB pages miss the TLB.
  void Grow(size_t ids) {
    size_t size = 1;
    while (size < ids) size *= 2;
    std::vector<uint64_t>().swap(entries_);
    entries_ = VectorOnHugePages<uint64_t>(size);
  }

  std::vector<uint64_t>& entries_;
  uint64_t stamp_ = 0;
  int64_t size_ = 0;
};

// Fills the result through `position` (a PositionTable).
template <typename Table>
UniqueAndCompactResult CompactWith(Table& position, const std::vector<int64_t>& seeds,
                                   const std::vector<int64_t>& indices) {
  UniqueAndCompactResult result;
  auto add = [&](int64_t node) {
    bool inserted = false;
    const int64_t at = position.FindOrInsert(node, &inserted);
    if (inserted) result.unique_nodes.push_back(node);
    return at;
  };
  constexpr size_t kAhead = 32;  // lookups prefetched ahead: a miss to DRAM spans ~10 of them
  result.unique_nodes.reserve(seeds.size());
  for (size_t i = 0; i < seeds.size(); ++i) {
    if (i + kAhead < seeds.size()) position.Prefetch(seeds[i + kAhead]);
    add(seeds[i]);
  }
  result.compacted_indices.reserve(indices.size());  // filled in order: no zero-fill first
  for (size_t i = 0; i < indices.size(); ++i) {
    if (i + kAhead < indices.size()) position.Prefetch(indices[i + kAhead]);
    result.compacted_indices.push_back(add(indices[i]));
  }
  return result;
}

// CompactWith for the DirectTable, without a branch on whether an id is new
// (in a sampled layer about every other one is, at random, so that branch
// mispredicted often): each id is written at the next unique slot of a
// buffer this thread reuses, and the slot is kept only if the id was new
// (the count moves past it).
UniqueAndCompactResult CompactDirect(DirectTable& position, uint64_t max_id, const std::vector<int64_t>& seeds,
                                     const std::vector<int64_t>& indices) {
  // Reused: not zero-filled per call. At most max_id + 1 ids are new, and one
  // more slot is written before an id is known not to be.
  thread_local std::vector<int64_t> unique;
  const size_t slots = static_cast<size_t>(std::min<uint64_t>(seeds.size() + indices.size(), max_id + 2));
  if (unique.size() < slots) {
    std::vector<int64_t>().swap(unique);  // freed first: its contents need not be kept
    unique.resize(slots);
  }
  constexpr size_t kAhead = 32;  // lookups prefetched ahead: a miss to DRAM spans ~10 of them
  for (size_t i = 0; i < seeds.size(); ++i) {
    if (i + kAhead < seeds.size()) position.Prefetch(seeds[i + kAhead]);
    unique[static_cast<size_t>(position.size())] = seeds[i];
    position.Position(seeds[i]);
  }
  UniqueAndCompactResult result;
  // Zero-filled first, then written through a pointer: a push_back per id
  // (which GCC calls out of line here) cost more than the fill.
  result.compacted_indices.resize(indices.size());
  int64_t* compacted = result.compacted_indices.data();
  for (size_t i = 0; i < indices.size(); ++i) {
    if (i + kAhead < indices.size()) position.Prefetch(indices[i + kAhead]);
    unique[static_cast<size_t>(position.size())] = indices[i];
    compacted[i] = position.Position(indices[i]);
  }
  result.unique_nodes.assign(unique.begin(), unique.begin() + position.size());
  return result;
}

template <typename Slots>
UniqueAndCompactResult CompactHashed(const std::vector<int64_t>& seeds, const std::vector<int64_t>& indices) {
  thread_local std::vector<typename Slots::Slot> memory;
  PositionTable<Slots> position(&memory, seeds.size() + indices.size() / 2);
  return CompactWith(position, seeds, indices);
}

// The ids' range: whether any is negative, and the largest.
struct IdRange {
  bool negative = false;
  uint64_t max = 0;
};

IdRange RangeOf(const std::vector<int64_t>& ids, IdRange range) {
  int64_t lowest = 0, highest = 0;
  for (int64_t id : ids) {
    lowest = std::min(lowest, id);
    highest = std::max(highest, id);
  }
  range.negative = range.negative || lowest < 0;
  range.max = std::max(range.max, static_cast<uint64_t>(highest));
  return range;
}

}  // namespace

void SetUniqueAndCompactGenerationForTesting(uint32_t generation) { t_direct_generation = generation; }

UniqueAndCompactResult UniqueAndCompact(const std::vector<int64_t>& seeds, const std::vector<int64_t>& indices) {
  const IdRange range = RangeOf(indices, RangeOf(seeds, IdRange{}));
  const uint64_t inputs = seeds.size() + indices.size();
  const bool positions_fit = inputs < (uint64_t{1} << 32) - 1;
  if (!range.negative && positions_fit && range.max < std::max(kDirectAlways, kDirectIdsPerInput * inputs)) {
    DirectTable position(static_cast<size_t>(range.max) + 1);
    return CompactDirect(position, range.max, seeds, indices);
  }
  const bool narrow = positions_fit && !range.negative && range.max < (uint64_t{1} << 32);
  return narrow ? CompactHashed<NarrowSlots>(seeds, indices) : CompactHashed<WideSlots>(seeds, indices);
}

}  // namespace faultline
