// Provides ItemSampler: splits item ids 0..n-1 into minibatches, optionally
// shuffled by a counter-based key per item so the order depends only on the
// seed (never on threads, workers or start method).
#ifndef FAULTLINE_REFERENCE_LOADER_ITEM_SAMPLER_H_
#define FAULTLINE_REFERENCE_LOADER_ITEM_SAMPLER_H_

#include <cstdint>
#include <vector>

#include "reference/base/status.h"

namespace faultline {

struct ItemSamplerOptions {
  int64_t num_items = 0;
  int64_t batch_size = 1;
  bool shuffle = false;
  bool drop_last = false;
  uint64_t seed = 0;
};

// Returns the minibatches of item ids; fails when num_items < 0 or
// batch_size < 1 (the error names the value).
Result<std::vector<std::vector<int64_t>>> MakeBatches(const ItemSamplerOptions& options);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_LOADER_ITEM_SAMPLER_H_
