// Provides MiniBatch and its byte encoding, used to pass minibatches from
// worker processes through shared memory: a worker encodes straight into its
// segment (WriteMiniBatch) and the main process decodes from where the bytes
// lie (ReadMiniBatch), so each array is copied once on each side.
#ifndef FAULTLINE_REFERENCE_LOADER_MINIBATCH_H_
#define FAULTLINE_REFERENCE_LOADER_MINIBATCH_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "reference/base/status.h"
#include "reference/loader/shared_memory.h"
#include "reference/sampling/multi_layer.h"
#include "reference/tensor/tensor.h"

namespace faultline {

struct MiniBatch {
  int64_t index = 0;              // position in the epoch
  std::vector<int64_t> seeds;     // the items of this minibatch
  std::vector<SampledLayer> layers;
  int64_t feature_dim = 0;
  std::vector<float> features;    // rows of the last layer's unique nodes
  // The same rows on the device in the *-cuda modes (not encoded: only the
  // main process copies to the device).
  Tensor features_on_device;

  bool operator==(const MiniBatch& other) const;
};

// Encodes a minibatch as bytes.
std::string EncodeMiniBatch(const MiniBatch& batch);
// Decodes bytes made by EncodeMiniBatch; truncated or corrupt input is a
// DataLoss error, and so is a minibatch that is not consistent (an indptr
// that does not cover its seeds and indices, a compacted index outside
// unique_nodes, features that are not feature_dim values per unique node
// of the last layer).
Result<MiniBatch> DecodeMiniBatch(std::string_view bytes);

// Encodes `batch` into `segment` where the reader will find it (the same
// bytes as EncodeMiniBatch, with no staging copy). `halfway`, when set, runs
// once half of the bytes are in (a fault-injection point for tests).
Status WriteMiniBatch(const MiniBatch& batch, SegmentWriter& segment, const std::function<void()>& halfway = nullptr);
// Decodes the minibatch in `segment`, as DecodeMiniBatch does.
Result<MiniBatch> ReadMiniBatch(SegmentReader& segment);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_LOADER_MINIBATCH_H_
