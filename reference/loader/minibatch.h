// Provides MiniBatch and its byte encoding, used to pass minibatches from
// worker processes through shared memory: a worker encodes each layer into
// its segment while it samples it (MiniBatchWriter), and the main process
// decodes from where the bytes lie (ReadMiniBatch), so each array is copied
// once on each side.
#ifndef FAULTLINE_REFERENCE_LOADER_MINIBATCH_H_
#define FAULTLINE_REFERENCE_LOADER_MINIBATCH_H_

#include <cstdint>
#include <functional>
#include <memory>
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

// Encodes a minibatch as bytes (each layer as one chunk; see
// MiniBatchWriter). A layer whose indptr does not cover its seeds, or whose
// arrays of edges differ in length, is an InvalidArgument error.
Result<std::string> EncodeMiniBatch(const MiniBatch& batch);
// Decodes bytes made by EncodeMiniBatch or a MiniBatchWriter; truncated or
// corrupt input is a DataLoss error, and so is a minibatch that is not
// consistent (an indptr that does not cover its seeds and indices, a
// compacted index outside unique_nodes, features that are not feature_dim
// values per unique node of the last layer).
Result<MiniBatch> DecodeMiniBatch(std::string_view bytes);

// Encodes `batch` into `segment`, as EncodeMiniBatch does, with no staging
// copy. `halfway`, when set, runs as MiniBatchWriter's does.
Status WriteMiniBatch(const MiniBatch& batch, SegmentWriter& segment, const std::function<void()>& halfway = nullptr);
// Decodes the minibatch in `segment`, as DecodeMiniBatch does.
Result<MiniBatch> ReadMiniBatch(SegmentReader& segment);

// Encodes a minibatch while it is produced, so that a worker lays it out in
// its segment as it samples, with no MiniBatch built first: Begin, then the
// layers (as the LayerSink of SampleMultiLayerInto, or AddLayer), then
// Features, then Finish. The bytes hold each layer's edges in the chunks
// they came in; DecodeMiniBatch joins them. After a failed call every call
// but Begin fails, and the segment holds no message (its length stays 0
// until Finish); write_failed() says whether writing the bytes failed
// (e.g. a full /dev/shm) rather than the order of the calls.
class MiniBatchWriter : public LayerSink {
 public:
  // Writes into `segment`. `halfway`, when set, runs once per minibatch,
  // when its first layer is in and nothing after it (a fault-injection
  // point for tests).
  explicit MiniBatchWriter(SegmentWriter& segment, std::function<void()> halfway = nullptr);
  // Writes into `out` (replacing its contents).
  explicit MiniBatchWriter(std::string& out);
  ~MiniBatchWriter() override;

  // Starts minibatch `index` (a writer can write one minibatch after another).
  Status Begin(int64_t index, const std::vector<int64_t>& seeds, size_t num_layers);
  Status BeginLayer(uint32_t layer, const std::vector<int64_t>& seeds, size_t expected_edges) override;
  Result<int64_t*> AddChunk(const SampledChunk& chunk) override;
  Result<const std::vector<int64_t>*> EndLayer(std::vector<int64_t> unique_nodes) override;
  // A whole layer (one made by other means than SampleMultiLayerInto).
  Status AddLayer(const SampledLayer& layer);
  // Returns where `count` feature values of dimension `dim` go, once the
  // last layer has ended.
  Result<float*> Features(int64_t dim, size_t count);
  // Ends the minibatch (after Features) and publishes it.
  Status Finish();

  // The unique nodes the last EndLayer took.
  const std::vector<int64_t>& unique_nodes() const;
  bool write_failed() const { return write_failed_; }

  class Bytes;  // where the bytes go (minibatch.cc)

 private:
  enum class State { kNotBegun, kLayers, kFeatures, kFailed };
  // OK in `state`; else fails the writer with "MiniBatchWriter: `what`".
  Status Expect(State state, const char* what);
  Status Fail(Status status);
  // Fails the writer for a failed write of its bytes.
  Status WriteFailed(Status status);
  // Every byte goes through here: a failure fails the writer.
  Result<char*> Extend(size_t n);
  Status U64(uint64_t v);
  Status Array(const void* data, uint64_t count, size_t element_bytes);
  Status WriteChunk(const int64_t* counts, uint64_t num_counts, const int64_t* edge_ids, const int64_t* indices,
                    uint64_t num_edges);
  // Ends the open layer with its unique nodes.
  Status CloseLayer(const std::vector<int64_t>& unique_nodes);

  std::unique_ptr<Bytes> bytes_;
  std::function<void()> halfway_;
  State state_ = State::kNotBegun;
  bool halfway_due_ = false;  // halfway_ has not run for this minibatch yet
  bool write_failed_ = false;
  size_t layers_left_ = 0;
  bool in_layer_ = false;
  size_t layer_header_ = 0;    // offset of the open layer's edge and chunk counts
  uint64_t layer_edges_ = 0, layer_chunks_ = 0;
  uint64_t layer_seeds_ = 0, layer_counts_ = 0;  // the open layer's seeds, and the counts its chunks held
  std::vector<int64_t> unique_[2];  // of the last two layers: one is the seeds of the layer being written
  int last_unique_ = 0;
};

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_LOADER_MINIBATCH_H_
