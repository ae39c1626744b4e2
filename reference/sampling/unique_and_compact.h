// Provides UniqueAndCompact: the node list of a sampled layer (seeds first,
// then newly reached nodes in first-appearance order, as GraphBolt orders
// them) and the sampled indices renumbered into positions of that list.
#ifndef FAULTLINE_REFERENCE_SAMPLING_UNIQUE_AND_COMPACT_H_
#define FAULTLINE_REFERENCE_SAMPLING_UNIQUE_AND_COMPACT_H_

#include <cstdint>
#include <vector>

namespace faultline {

// Holds the unique nodes of a layer and the compacted indices:
// unique_nodes[compacted_indices[i]] == indices[i].
struct UniqueAndCompactResult {
  std::vector<int64_t> unique_nodes;
  std::vector<int64_t> compacted_indices;
};

// Lists the distinct seeds in order of first occurrence, then every node of
// `indices` not seen yet, in order of first appearance, and maps `indices`
// to positions in that list. Each calling thread keeps its lookup table for
// the next call: for non-negative ids below 2^22, or dense ones, 8 bytes per
// id up to the largest it has seen, rounded up to a power of two (at most
// 32 MiB, or 256 bytes per id of its largest call), advised onto 2 MiB
// pages, and a buffer of 8 bytes per input of its largest such call (at
// most one per id); else a hash table of 8 or 16 bytes per slot.
UniqueAndCompactResult UniqueAndCompact(const std::vector<int64_t>& seeds, const std::vector<int64_t>& indices);

// Sets the calling thread's call counter of the dense-id table (tests: its
// wrap after 2^32 calls, which must forget every earlier entry). Setting it
// backwards makes entries of earlier calls with the reused stamps read as
// present: only for reaching the wrap.
void SetUniqueAndCompactGenerationForTesting(uint32_t generation);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_SAMPLING_UNIQUE_AND_COMPACT_H_
