// Provides UniqueAndCompact: the node list of a sampled layer (seeds first,
// then newly reached nodes in first-appearance order, as GraphBolt orders
// them) and the sampled indices renumbered into positions of that list;
// LayerCompactor computes the same from the indices in pieces.
#ifndef FAULTLINE_REFERENCE_SAMPLING_UNIQUE_AND_COMPACT_H_
#define FAULTLINE_REFERENCE_SAMPLING_UNIQUE_AND_COMPACT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "reference/base/status.h"

namespace faultline {

// Holds the unique nodes of a layer and the compacted indices:
// unique_nodes[compacted_indices[i]] == indices[i].
struct UniqueAndCompactResult {
  std::vector<int64_t> unique_nodes;
  std::vector<int64_t> compacted_indices;
};

// Refuses negative ids, which are no node ids (InvalidArgument naming the
// first one, seeds before indices: "seeds[0]=-5 is negative; expected node
// ids >= 0"): the rule of UniqueAndCompact on every backend.
Status CheckCompactIds(const std::vector<int64_t>& seeds, const std::vector<int64_t>& indices);

// Lists the distinct seeds in order of first occurrence, then every node of
// `indices` not seen yet, in order of first appearance, and maps `indices`
// to positions in that list. Fails on a negative id (CheckCompactIds), as
// UniqueAndCompactOnDevice does. Each calling thread keeps its lookup tables
// for the next call (one of each entry size it has used): for non-negative
// ids below 2^22, or dense ones, a table with an entry per id up to the
// largest it has seen, rounded up to a power of two and advised onto 2 MiB
// pages (4-byte entries while every id is below 2^24, else 8: at most 16
// MiB for ids below 2^22, else at most 128 or 256 bytes per input of its
// largest call), and a buffer of up to 16 bytes per input of its largest
// such call (at most 8 per id); else a hash table of 8 or 16 bytes per slot.
Result<UniqueAndCompactResult> UniqueAndCompact(const std::vector<int64_t>& seeds, const std::vector<int64_t>& indices);

// UniqueAndCompact piece by piece: the seeds when it is made, then the
// indices in order, in as many pieces as they come (the unique nodes and
// compacted indices are those of UniqueAndCompact over the pieces joined).
// Every id, seeds and indices, must lie in [min_id, max_id];
// expected_indices (a guess) picks and sizes the table as the number of
// indices does for UniqueAndCompact. Use it on the thread that made it; a
// second compactor alive on the same thread uses memory of its own.
class LayerCompactor {
 public:
  LayerCompactor(const std::vector<int64_t>& seeds, int64_t min_id, int64_t max_id, size_t expected_indices);
  ~LayerCompactor();
  LayerCompactor(const LayerCompactor&) = delete;
  LayerCompactor& operator=(const LayerCompactor&) = delete;

  // Adds indices[0, count), writing their positions in the unique nodes to
  // compacted[0, count).
  void Add(const int64_t* indices, size_t count, int64_t* compacted);

  // The unique nodes so far (once: the compactor is done after).
  std::vector<int64_t> TakeUniqueNodes();

  struct Impl;

 private:
  const bool owns_thread_tables_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_SAMPLING_UNIQUE_AND_COMPACT_H_
