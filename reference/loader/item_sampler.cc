// Implements MakeBatches: a shuffle is a sort by (Philox key, item id).
#include "reference/loader/item_sampler.h"

#include <algorithm>
#include <numeric>

#include "kernels/sampling_core.h"

namespace faultline {

Result<std::vector<std::vector<int64_t>>> MakeBatches(const ItemSamplerOptions& o) {
  if (o.num_items < 0) return InvalidArgumentError("num_items is " + std::to_string(o.num_items) + "; expected >= 0");
  if (o.batch_size < 1) {
    return InvalidArgumentError("batch_size is " + std::to_string(o.batch_size) + "; expected >= 1");
  }
  std::vector<int64_t> items(o.num_items);
  std::iota(items.begin(), items.end(), 0);
  if (o.shuffle) {
    std::vector<uint64_t> keys(o.num_items);
    for (int64_t i = 0; i < o.num_items; ++i) {
      keys[i] = kernels::sampling::RandomBits(o.seed, 0, kernels::sampling::kTagShuffle, static_cast<uint32_t>(i),
                                              static_cast<uint32_t>(i >> 32));
    }
    std::sort(items.begin(), items.end(),
              [&](int64_t a, int64_t b) { return keys[a] != keys[b] ? keys[a] < keys[b] : a < b; });
  }
  std::vector<std::vector<int64_t>> batches;
  for (int64_t begin = 0; begin < o.num_items; begin += o.batch_size) {
    const int64_t end = std::min(begin + o.batch_size, o.num_items);
    if (end - begin < o.batch_size && o.drop_last) break;
    batches.emplace_back(items.begin() + begin, items.begin() + end);
  }
  return batches;
}

}  // namespace faultline
