// Implements LayerCompactor, and UniqueAndCompact as one compactor fed all
// the indices at once, with a table from node id to position, the hot
// random access of every layer, in one of two forms:
//
// - DirectTable, when the ids are non-negative, below 2^32 - 1, and either
//   all below 2^22 or dense (the largest below 16 times the number of ids
//   expected): one entry per possible id (4 bytes for ids below 2^24,
//   else 8), indexed by the id itself (no hashing, no probing), stamped
//   with the compactor's generation so that it is cleared only when the
//   generation wraps (8 or 32 bits); a large table is advised onto 2 MiB
//   pages (best effort: fewer TLB misses per lookup).
//   Graph generators and partitioners put the hubs at nearby (low) ids, so
//   the entries read most often share cache lines; a hash spreads them out.
// - PositionTable otherwise: open addressing (linear probing over a
//   power-of-two table at most half full), 8-byte slots when every id is
//   non-negative and below 2^32 - 1, sized for half of the expected indices
//   being new and doubled when half full.
//
// Either way each thread reuses its table's memory from compactor to
// compactor (no page faults; a second compactor alive on the thread has
// its own), and the table is not allocated per node. The
// DirectTable's compactors also write the unique nodes through a buffer the
// thread reuses, without a branch per id (DirectTable::Compact).
#include "reference/sampling/unique_and_compact.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "reference/base/huge_pages.h"

namespace faultline {

// A table form: compacts ids in order, `compacted` nullptr for the seeds.
struct LayerCompactor::Impl {
  virtual ~Impl() = default;
  virtual void Add(const int64_t* ids, size_t count, int64_t* compacted) = 0;
  virtual std::vector<int64_t> TakeUniqueNodes() = 0;
};

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

// Direct when the ids are dense (at most kDirectIdsPerInput entries per
// expected input: the seeds and the expected indices) or all below
// kDirectAlways, whatever the layer's size (the table, rounded up to a
// power of two, is then at most 16 MiB of 4-byte entries). A sampled
// layer's ids are node ids of its graph, so the table is at most twice the
// graph's indptr with 8-byte entries, and at most its indptr with 4-byte
// ones (graphs of fewer than 2^24 nodes).
constexpr uint64_t kDirectIdsPerInput = 16, kDirectAlways = uint64_t{1} << 22;

// A DirectTable entry: generation << kPositionBits | position. 4-byte
// entries (an 8-bit generation, 24-bit positions) when every id is below
// 2^24, which halves the table that every sampled edge looks up at random
// (a graph of 2 M nodes: 8 MiB instead of 16 MiB of the L3 cache, which
// the table shares with the graph and, with two samplers, with the other
// sampler's table); 8-byte entries (32 and 32 bits) otherwise.
template <typename Entry>
struct DirectEntry {
  static constexpr int kPositionBits = sizeof(Entry) == 4 ? 24 : 32;
  static constexpr Entry kPositionMask = (Entry{1} << kPositionBits) - 1;
  static constexpr uint32_t kLastGeneration = static_cast<uint32_t>(~Entry{0} >> kPositionBits);
  // Ids in [0, kIdLimit) have positions below 2^kPositionBits.
  static constexpr uint64_t kIdLimit = uint64_t{1} << kPositionBits;
  // This thread's table memory and the generation of its last compactor.
  static thread_local std::vector<Entry> t_entries;
  static thread_local uint32_t t_generation;
};
template <typename Entry>
thread_local std::vector<Entry> DirectEntry<Entry>::t_entries;
template <typename Entry>
thread_local uint32_t DirectEntry<Entry>::t_generation = 0;
using DirectEntry32 = DirectEntry<uint32_t>;
using DirectEntry64 = DirectEntry<uint64_t>;
static_assert(DirectEntry32::kPositionMask == 0xffffff && DirectEntry32::kLastGeneration == 255 &&
                  DirectEntry32::kIdLimit == uint64_t{1} << 24,
              "4-byte entries: 24-bit positions, generations 1..255");
static_assert(DirectEntry64::kPositionMask == 0xffffffff && DirectEntry64::kLastGeneration == 0xffffffff &&
                  DirectEntry64::kIdLimit == uint64_t{1} << 32,
              "8-byte entries: 32-bit positions, generations 1..2^32 - 1");

std::atomic<bool> g_wide_direct_entries_only{false};  // tests: the 8-byte form for every id
thread_local int t_last_direct_entry_bytes = 0;       // tests: LastDirectEntryBytesForTesting

// Maps ids in [0, ids) to positions through entry[id] = generation <<
// kPositionBits | position. An entry of an older compactor (another
// generation) reads as absent, so the memory is cleared only when the
// generation wraps (every 255 calls with 4-byte entries: a few
// milliseconds per 255 layers for a table of millions of ids).
template <typename Entry>
class DirectTable {
  using Form = DirectEntry<Entry>;

 public:
  explicit DirectTable(size_t ids) : entries_(Form::t_entries) {
    if (Form::t_generation >= Form::kLastGeneration) {  // the next stamp would repeat an old one
      std::fill(entries_.begin(), entries_.end(), Entry{0});
      Form::t_generation = 0;
    }
    ++Form::t_generation;
    if (entries_.size() < ids) Grow(ids);
    stamp_ = static_cast<Entry>(Form::t_generation) << Form::kPositionBits;
  }

  // Looks up ids[0, count) in order without a branch on whether an id is
  // new (about every other id of a sampled layer is, at random, so that
  // branch mispredicted often): each id is written at unique[size()] and
  // kept only if it was new (the count moves past it), and with kCompact its
  // position goes to compacted[i]. The count and stamp are locals, and "new"
  // picks the position through a mask: kept in members, every store to
  // unique[] reloaded them (they might alias), and GCC turned the select
  // back into a branch.
  template <bool kCompact>
  void Compact(const int64_t* ids, size_t count, int64_t* unique, int64_t* compacted) {
    Entry* const entries = entries_.data();
    const Entry stamp = stamp_;
    Entry size = static_cast<Entry>(size_);
    constexpr size_t kAhead = 32;  // lookups prefetched ahead: a miss to DRAM spans ~10 of them
    for (size_t i = 0; i < count; ++i) {
      if (i + kAhead < count) __builtin_prefetch(entries + ids[i + kAhead]);
      const int64_t id = ids[i];
      assert(id >= 0 && static_cast<size_t>(id) < entries_.size() && "an id outside the compactor's range");
      unique[size] = id;
      const Entry seen = entries[id];
      const Entry is_new = static_cast<Entry>((seen & ~Form::kPositionMask) != stamp);
      const Entry take_size = static_cast<Entry>(0 - is_new);  // all ones when new
      const Entry position = (size & take_size) | (seen & Form::kPositionMask & ~take_size);
      entries[id] = stamp | position;
      size += is_new;
      if (kCompact) compacted[i] = static_cast<int64_t>(position);
    }
    size_ = static_cast<int64_t>(size);
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
    std::vector<Entry>().swap(entries_);
    entries_ = VectorOnHugePages<Entry>(size);
  }

  std::vector<Entry>& entries_;
  Entry stamp_ = 0;
  int64_t size_ = 0;
};

// Whether this thread's reused table memory belongs to a live compactor: a
// second one alive on the same thread gets memory of its own instead (the
// dense-id table's next stamp would make the first one's entries absent).
thread_local bool t_tables_in_use = false;

// The unique nodes' buffer of this thread's DirectTable compactors (either
// form: one of them is alive at a time).
thread_local std::vector<int64_t> t_direct_unique;

// The DirectTable form (DirectTable::Compact), with the unique nodes in a
// buffer this thread reuses.
template <typename Entry>
class DirectCompactor : public LayerCompactor::Impl {
 public:
  explicit DirectCompactor(uint64_t max_id) : position_(static_cast<size_t>(max_id) + 1), max_id_(max_id) {
    t_last_direct_entry_bytes = sizeof(Entry);
  }

  void Add(const int64_t* ids, size_t count, int64_t* compacted) override {
    Reserve(count);
    if (compacted == nullptr) return position_.template Compact<false>(ids, count, unique_.data(), nullptr);
    position_.template Compact<true>(ids, count, unique_.data(), compacted);
  }

  std::vector<int64_t> TakeUniqueNodes() override {
    return std::vector<int64_t>(unique_.begin(), unique_.begin() + position_.size());
  }

 private:
  // Room for `count` more ids: at most max_id + 1 are new, and one more slot
  // is written before an id is known not to be. Grown by doubling, keeping
  // this layer's unique nodes; not shrunk or zero-filled per layer.
  void Reserve(size_t count) {
    const size_t needed =
        static_cast<size_t>(std::min<uint64_t>(static_cast<uint64_t>(position_.size()) + count + 1, max_id_ + 2));
    if (unique_.size() < needed) {
      unique_.resize(std::max(needed, std::min<size_t>(2 * unique_.size(), static_cast<size_t>(max_id_ + 2))));
    }
  }

  DirectTable<Entry> position_;
  std::vector<int64_t>& unique_ = t_direct_unique;
  const uint64_t max_id_;
};

// The PositionTable form, in `memory` (this thread's reused memory, or the
// compactor's own).
template <typename Slots>
class HashedCompactor : public LayerCompactor::Impl {
 public:
  HashedCompactor(bool thread_memory, size_t expected)
      : position_(thread_memory ? &t_memory : &own_memory_, expected) {}

  void Add(const int64_t* ids, size_t count, int64_t* compacted) override {
    constexpr size_t kAhead = 32;  // as in DirectTable::Compact
    for (size_t i = 0; i < count; ++i) {
      if (i + kAhead < count) position_.Prefetch(ids[i + kAhead]);
      bool inserted = false;
      const int64_t at = position_.FindOrInsert(ids[i], &inserted);
      if (inserted) unique_.push_back(ids[i]);
      if (compacted != nullptr) compacted[i] = at;
    }
  }

  std::vector<int64_t> TakeUniqueNodes() override { return std::move(unique_); }

 private:
  static thread_local std::vector<typename Slots::Slot> t_memory;
  std::vector<typename Slots::Slot> own_memory_;  // declared before position_, which holds it
  PositionTable<Slots> position_;
  std::vector<int64_t> unique_;
};
template <typename Slots>
thread_local std::vector<typename Slots::Slot> HashedCompactor<Slots>::t_memory;

// The ids' range: the smallest and the largest (0 and 0 for none).
struct IdRange {
  int64_t lowest = 0, highest = 0;
};

IdRange RangeOf(const std::vector<int64_t>& ids, IdRange range) {
  for (int64_t id : ids) {
    range.lowest = std::min(range.lowest, id);
    range.highest = std::max(range.highest, id);
  }
  return range;
}

}  // namespace

// The tests' reach into the tables, declared in unique_and_compact_testing.h
// (a tests-only header the library does not include).
void SetUniqueAndCompactGenerationForTesting(uint32_t generation) {
  DirectEntry32::t_generation = std::min(generation, DirectEntry32::kLastGeneration);
  DirectEntry64::t_generation = std::min(generation, DirectEntry64::kLastGeneration);
}

void UseWideDirectEntriesOnlyForTesting(bool wide_only) { g_wide_direct_entries_only = wide_only; }

int LastDirectEntryBytesForTesting() { return t_last_direct_entry_bytes; }

LayerCompactor::LayerCompactor(const std::vector<int64_t>& seeds, int64_t min_id, int64_t max_id,
                               size_t expected_indices)
    : owns_thread_tables_(!t_tables_in_use) {
  const uint64_t inputs = seeds.size() + expected_indices;
  // Positions stay below 2^32 - 1 when there are fewer distinct ids than that.
  const bool positions_fit = min_id >= 0 && uint64_t(max_id) < (uint64_t{1} << 32) - 1;
  const uint64_t dense_limit = std::max(kDirectAlways, kDirectIdsPerInput * inputs);
  t_last_direct_entry_bytes = 0;  // a DirectCompactor sets its entry size
  if (owns_thread_tables_ && positions_fit && static_cast<uint64_t>(max_id) < dense_limit) {
    if (static_cast<uint64_t>(max_id) < DirectEntry32::kIdLimit && !g_wide_direct_entries_only) {
      impl_ = std::make_unique<DirectCompactor<uint32_t>>(static_cast<uint64_t>(max_id));
    } else {
      impl_ = std::make_unique<DirectCompactor<uint64_t>>(static_cast<uint64_t>(max_id));
    }
  } else if (positions_fit) {
    impl_ = std::make_unique<HashedCompactor<NarrowSlots>>(owns_thread_tables_, seeds.size() + expected_indices / 2);
  } else {
    impl_ = std::make_unique<HashedCompactor<WideSlots>>(owns_thread_tables_, seeds.size() + expected_indices / 2);
  }
  impl_->Add(seeds.data(), seeds.size(), nullptr);
  // Marked only now: if that threw, no destructor would clear it.
  if (owns_thread_tables_) t_tables_in_use = true;
}

LayerCompactor::~LayerCompactor() {
  if (owns_thread_tables_) t_tables_in_use = false;
}

void LayerCompactor::Add(const int64_t* indices, size_t count, int64_t* compacted) {
  impl_->Add(indices, count, compacted);
}

std::vector<int64_t> LayerCompactor::TakeUniqueNodes() { return impl_->TakeUniqueNodes(); }

Status CheckCompactIds(const std::vector<int64_t>& seeds, const std::vector<int64_t>& indices) {
  for (const auto& [ids, name] : {std::pair{&seeds, "seeds"}, std::pair{&indices, "indices"}}) {
    for (size_t i = 0; i < ids->size(); ++i) {
      if ((*ids)[i] < 0) {
        return InvalidArgumentError(std::string(name) + "[" + std::to_string(i) + "]=" + std::to_string((*ids)[i]) +
                                    " is negative; expected node ids >= 0");
      }
    }
  }
  return OkStatus();
}

Result<UniqueAndCompactResult> UniqueAndCompact(const std::vector<int64_t>& seeds,
                                                const std::vector<int64_t>& indices) {
  const IdRange range = RangeOf(indices, RangeOf(seeds, IdRange{}));
  if (range.lowest < 0) return CheckCompactIds(seeds, indices);  // finds the first
  LayerCompactor compactor(seeds, range.lowest, range.highest, indices.size());
  UniqueAndCompactResult result;
  // Zero-filled first, then written through a pointer: a push_back per id
  // (which GCC calls out of line here) cost more than the fill.
  result.compacted_indices.resize(indices.size());
  compactor.Add(indices.data(), indices.size(), result.compacted_indices.data());
  result.unique_nodes = compactor.TakeUniqueNodes();
  return result;
}

}  // namespace faultline
