// Provides what sampling produces: a SampledSubgraph (a whole layer's
// picks), and a SampledChunk (the picks of a run of seeds, handed over while
// the next ones are sampled).
#ifndef FAULTLINE_REFERENCE_SAMPLING_SAMPLED_SUBGRAPH_H_
#define FAULTLINE_REFERENCE_SAMPLING_SAMPLED_SUBGRAPH_H_

#include <cstdint>
#include <memory>
#include <vector>

namespace faultline {

// Holds the sampled incoming edges of a list of seeds, like GraphBolt's
// FusedSampledSubgraph: the picks of seeds[i] are positions
// [indptr[i], indptr[i+1]) of `indices` (source node ids) and
// `original_edge_ids` (edge ids in the graph).
struct SampledSubgraph {
  std::vector<int64_t> seeds;
  std::vector<int64_t> indptr;
  std::vector<int64_t> indices;
  std::vector<int64_t> original_edge_ids;
};

// The sampled edges of a chunk of consecutive seeds, from seeds[first_seed]
// on: counts[i] picks for seeds[first_seed + i], one after another in
// original_edge_ids and indices (as in SampledSubgraph).
struct SampledChunk {
  // An int64 array that keeps its memory when it shrinks and is not
  // zero-filled when it grows (every value is written).
  class Buffer {
   public:
    void Resize(int64_t n);
    int64_t* data() { return data_.get(); }
    const int64_t* begin() const { return data_.get(); }
    const int64_t* end() const { return data_.get() + size_; }
    int64_t size() const { return size_; }

   private:
    std::unique_ptr<int64_t[]> data_;
    int64_t size_ = 0, capacity_ = 0;
  };

  int64_t first_seed = 0;
  std::vector<int64_t> counts;
  Buffer original_edge_ids, indices;
};

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_SAMPLING_SAMPLED_SUBGRAPH_H_
