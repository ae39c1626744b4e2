// Implements SampledChunk's buffer.
#include "reference/sampling/sampled_subgraph.h"

namespace faultline {

void SampledChunk::Buffer::Resize(int64_t n) {
  if (capacity_ < n) {
    data_.reset(new int64_t[static_cast<size_t>(n)]);  // not zero-filled: every value is written
    capacity_ = n;
  }
  size_ = n;
}

}  // namespace faultline
