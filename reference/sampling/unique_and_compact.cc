// Implements UniqueAndCompact with one open-addressing hash table from node
// id to position (linear probing over a power-of-two table at most half
// full): no per-node allocation, unlike std::unordered_map.
//
// The table is the hot random access of every layer, so it is kept small:
// when every id and position fits in 32 bits (any graph under 4 G nodes) a
// slot is one 8-byte word, the table starts at a size for half of the
// indices being new and doubles when half full, and each thread reuses its
// table's memory from call to call (no page faults, a short clear).
#include "reference/sampling/unique_and_compact.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

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

template <typename Slots>
UniqueAndCompactResult Compact(const std::vector<int64_t>& seeds, const std::vector<int64_t>& indices) {
  thread_local std::vector<typename Slots::Slot> memory;
  PositionTable<Slots> position(&memory, seeds.size() + indices.size() / 2);
  UniqueAndCompactResult result;
  auto add = [&](int64_t node) {
    bool inserted = false;
    const int64_t at = position.FindOrInsert(node, &inserted);
    if (inserted) result.unique_nodes.push_back(node);
    return at;
  };
  constexpr size_t kAhead = 16;
  result.unique_nodes.reserve(seeds.size());
  for (size_t i = 0; i < seeds.size(); ++i) {
    if (i + kAhead < seeds.size()) position.Prefetch(seeds[i + kAhead]);
    add(seeds[i]);
  }
  result.compacted_indices.resize(indices.size());
  for (size_t i = 0; i < indices.size(); ++i) {
    if (i + kAhead < indices.size()) position.Prefetch(indices[i + kAhead]);
    result.compacted_indices[i] = add(indices[i]);
  }
  return result;
}

bool AllIdsFitIn32Bits(const std::vector<int64_t>& ids) {
  uint64_t any_high = 0;
  for (int64_t id : ids) any_high |= static_cast<uint64_t>(id) >> 32;
  return any_high == 0;
}

}  // namespace

UniqueAndCompactResult UniqueAndCompact(const std::vector<int64_t>& seeds, const std::vector<int64_t>& indices) {
  const bool narrow = seeds.size() + indices.size() < (uint64_t{1} << 32) - 1 && AllIdsFitIn32Bits(seeds) &&
                      AllIdsFitIn32Bits(indices);
  return narrow ? Compact<NarrowSlots>(seeds, indices) : Compact<WideSlots>(seeds, indices);
}

}  // namespace faultline
