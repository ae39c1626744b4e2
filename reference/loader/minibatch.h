// Provides MiniBatch and its byte encoding, used to pass minibatches from
// worker processes through shared memory: a worker encodes each layer into
// its segment while it samples it (MiniBatchWriter), with each array
// contiguous, so that the main process can hand out a MiniBatchView of the
// arrays where they lie (ViewMiniBatch) or copy them once (DecodeMiniBatch).
#ifndef FAULTLINE_REFERENCE_LOADER_MINIBATCH_H_
#define FAULTLINE_REFERENCE_LOADER_MINIBATCH_H_

#include <cstddef>
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
  int64_t index = 0;           // position in the epoch
  std::vector<int64_t> seeds;  // the items of this minibatch
  std::vector<SampledLayer> layers;
  int64_t feature_dim = 0;
  std::vector<float> features;  // rows of the last layer's unique nodes
  // The same rows on the device in the *-cuda modes (not encoded: only the
  // main process copies to the device).
  Tensor features_on_device;

  bool operator==(const MiniBatch& other) const;
};

// A read-only array that lies elsewhere (a view's bytes).
template <typename T>
class ArrayView {
 public:
  ArrayView() = default;
  ArrayView(const T* data, size_t size) : data_(data), size_(size) {}
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  const T& operator[](size_t i) const { return data_[i]; }
  std::vector<T> ToVector() const { return std::vector<T>(begin(), end()); }

 private:
  const T* data_ = nullptr;
  size_t size_ = 0;
};

// One layer of a MiniBatchView: SampledLayer's arrays, where they lie.
struct LayerView {
  ArrayView<int64_t> seeds, indptr, indices, original_edge_ids;
  ArrayView<int64_t> unique_nodes, compacted_indices;
};

// A minibatch read where its bytes lie, with no copy: the fields of
// MiniBatch as ArrayViews. A view holds what its arrays lie in (a worker's
// segment slot, or a minibatch the loader built) until it and its copies
// are dropped; the loader does not reuse a slot meanwhile.
struct MiniBatchView {
  int64_t index = 0;
  ArrayView<int64_t> seeds;
  std::vector<LayerView> layers;
  int64_t feature_dim = 0;
  ArrayView<float> features;
  Tensor features_on_device;          // as in MiniBatch
  std::shared_ptr<const void> holds;  // keeps the arrays' bytes

  // A view of `batch`, which it keeps.
  static MiniBatchView Of(std::shared_ptr<const MiniBatch> batch);
  // A copy of the arrays.
  MiniBatch ToMiniBatch() const;
};

// Encodes a minibatch as bytes (see MiniBatchWriter). The layers must
// chain: layer 0's seeds are the minibatch's, each later layer's the unique
// nodes of the one before, and every layer's unique nodes start with its
// seeds (the bytes hold the nodes once: every node array of a minibatch is
// a prefix of its last layer's unique nodes). What the bytes cannot hold or
// ViewMiniBatch would reject is an InvalidArgument error that names the
// layer: layers that do not chain; an indptr that does not cover its seeds,
// start at 0, rise and end at its edges; arrays of edges of different
// lengths.
Result<std::string> EncodeMiniBatch(const MiniBatch& batch);
// Views bytes made by EncodeMiniBatch or a MiniBatchWriter where they lie
// (the view's arrays point into `bytes`, which must start 8-byte aligned,
// and its `holds` is empty). Truncated or corrupt input is a DataLoss error,
// and so is a minibatch that is not consistent (an indptr that does not
// start at 0, decreases or does not end at the layer's edges, a compacted
// index outside unique_nodes, node counts that do not fit the nodes array;
// features that are not feature_dim values per unique node of the last
// layer): a consumer can index every array with what the view holds. The
// layers chain by construction (the view's node arrays are prefixes of one
// array). Node and edge ids are not checked against a graph (the view has
// none).
Result<MiniBatchView> ViewMiniBatch(std::string_view bytes);
// Decodes the same into a MiniBatch (a copy; any alignment).
Result<MiniBatch> DecodeMiniBatch(std::string_view bytes);

// Encodes `batch` into `segment`, as EncodeMiniBatch does, with no staging
// copy. `halfway`, when set, runs as MiniBatchWriter's does.
Status WriteMiniBatch(const MiniBatch& batch, SegmentWriter& segment, const std::function<void()>& halfway = nullptr);
// Views the minibatch in `segment`, as ViewMiniBatch does; the view holds
// the mapping its bytes lie in (past the reader's end, and past a later
// read that remaps a segment the writer grew). It reads what the segment
// holds: a writer that writes the segment again changes what it reads.
Result<MiniBatchView> ReadMiniBatch(SegmentReader& segment);

// Encodes a minibatch while it is produced, so that a worker lays it out in
// its segment as it samples, with no MiniBatch built first: Begin, then the
// layers (as the LayerSink of SampleMultiLayerInto, or AddLayer), then
// Features, then Finish. Each layer's arrays of edges lie contiguous in
// regions reserved for the edges BeginLayer expects; a layer with more
// edges moves its regions apart once per doubling. The nodes go in once,
// before the features. A layer that does not chain (see EncodeMiniBatch) is
// an InvalidArgument error (BeginLayer: its seeds; EndLayer and AddLayer:
// its unique nodes); seeds that are the very vector the last EndLayer
// returned are not compared. After a failed call every call
// but Begin fails, and the segment holds no message (its length stays 0
// until Finish); write_failed() says whether writing the bytes failed
// (e.g. the segment could not grow) rather than the order of the calls.
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

  // The nodes so far: the unique nodes of the last layer that ended (by
  // EndLayer or AddLayer), or the minibatch's seeds before its first layer.
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
  // Appends a chunk's edges to the open layer; returns where its compacted
  // indices go.
  Result<int64_t*> WriteChunk(const int64_t* counts, uint64_t num_counts, const int64_t* edge_ids,
                              const int64_t* indices, uint64_t num_edges);
  // Makes the open layer's regions hold at least `edges` edges.
  Status Grow(uint64_t edges);
  // Ends the open layer with its unique nodes.
  Status CloseLayer(const std::vector<int64_t>& unique_nodes);

  std::unique_ptr<Bytes> bytes_;
  std::function<void()> halfway_;
  State state_ = State::kNotBegun;
  bool halfway_due_ = false;  // halfway_ has not run for this minibatch yet
  bool write_failed_ = false;
  size_t layers_left_ = 0;
  bool in_layer_ = false;
  // The open layer: where its header (unique nodes, edges, capacity),
  // indptr and regions (edge ids, indices, compacted indices; `capacity_`
  // edges each) lie.
  size_t layer_header_ = 0, indptr_at_ = 0, regions_at_ = 0;
  uint64_t capacity_ = 0, layer_edges_ = 0;
  uint64_t layer_seeds_ = 0, layer_counts_ = 0;  // its seeds, and the counts its chunks held
  size_t layer_ = 0;                             // the layer being written, or next
  // The minibatch's seeds, then the unique nodes of the last two layers: the
  // latest (nodes()) are the seeds of the layer being written, the other may
  // still be read by the sampler.
  std::vector<int64_t> unique_[2];
  int last_unique_ = 0;
  std::vector<int64_t>& nodes();
};

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_LOADER_MINIBATCH_H_
