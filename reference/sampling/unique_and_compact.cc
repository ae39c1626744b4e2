// Implements UniqueAndCompact with one open-addressing hash table from node
// id to position (linear probing over a power-of-two table at most half
// full): no per-node allocation, unlike std::unordered_map.
#include "reference/sampling/unique_and_compact.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace faultline {
namespace {

// Maps node ids to their first position. A slot holds the id and its
// position side by side (one cache line per probe); position -1 marks an
// empty slot, so every int64 id is a valid key.
class PositionTable {
 public:
  explicit PositionTable(size_t expected) {
    size_t capacity = 16;
    while (capacity < 2 * expected) capacity *= 2;
    slots_.assign(capacity, Slot{0, -1});
    mask_ = capacity - 1;
  }

  // Returns the position of `node`, giving it `next` when it is new.
  int64_t FindOrInsert(int64_t node, int64_t next, bool* inserted) {
    for (size_t slot = Home(node);; slot = (slot + 1) & mask_) {
      Slot& s = slots_[slot];
      if (s.position < 0) {
        s = Slot{node, next};
        *inserted = true;
        return next;
      }
      if (s.node == node) {
        *inserted = false;
        return s.position;
      }
    }
  }

 private:
  // A 64-bit mix (splitmix64's finalizer) so clustered ids spread out.
  size_t Home(int64_t node) const {
    uint64_t h = static_cast<uint64_t>(node);
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
    h ^= h >> 31;
    return h & mask_;
  }

  struct Slot {
    int64_t node;
    int64_t position;
  };
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

}  // namespace

UniqueAndCompactResult UniqueAndCompact(const std::vector<int64_t>& seeds, const std::vector<int64_t>& indices) {
  UniqueAndCompactResult result;
  PositionTable position(seeds.size() + indices.size());
  auto add = [&](int64_t node) {
    bool inserted = false;
    const int64_t at = position.FindOrInsert(node, static_cast<int64_t>(result.unique_nodes.size()), &inserted);
    if (inserted) result.unique_nodes.push_back(node);
    return at;
  };
  result.unique_nodes.reserve(seeds.size());
  for (int64_t seed : seeds) add(seed);
  result.compacted_indices.reserve(indices.size());
  for (int64_t node : indices) result.compacted_indices.push_back(add(node));
  return result;
}

}  // namespace faultline
