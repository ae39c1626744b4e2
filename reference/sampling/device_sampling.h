// Provides neighbor sampling on a device runtime (simcuda or cuda): the graph
// lives in device memory (cuda-cuda) or in pinned host memory read by the
// device through unified addressing (pinned-cuda). The kernels run the same
// per-seed routine as the CPU reference, so the results are bit-identical.
// The calls that compact or take prefix sums on the device read (and so
// clear) the calling thread's last error first (kernels/scan.h).
#ifndef FAULTLINE_REFERENCE_SAMPLING_DEVICE_SAMPLING_H_
#define FAULTLINE_REFERENCE_SAMPLING_DEVICE_SAMPLING_H_

#include <array>
#include <cstdint>
#include <vector>

#include "reference/base/status.h"
#include "reference/graph/csc_graph.h"
#include "reference/runtime/runtime.h"
#include "reference/sampling/multi_layer.h"
#include "reference/sampling/sample_neighbors.h"
#include "reference/sampling/unique_and_compact.h"
#include "reference/tensor/tensor.h"

namespace faultline {

enum class GraphPlacement {
  kDevice,      // copied into device memory
  kPinnedHost,  // pinned host memory, read by kernels through UVA
};

// A CSC graph placed where kernels can read it.
class DeviceGraph {
 public:
  // Copies (kDevice) or pins a copy of (kPinnedHost) `graph` for `device`
  // of `runtime`, which must be simcuda or cuda.
  static Result<DeviceGraph> Create(const CscGraph& graph, DeviceRuntime& runtime, GraphPlacement placement,
                                    int device = 0);

  DeviceRuntime& runtime() const { return *runtime_; }
  int device() const { return device_; }
  GraphPlacement placement() const { return placement_; }
  int64_t num_nodes() const { return num_nodes_; }
  int64_t num_edges() const { return indices_.numel(); }
  // The most edges any node has: with num_edges, it bounds a hop's picks
  // before they are counted.
  int64_t max_degree() const { return max_degree_; }
  bool has_weights() const { return has_weights_; }
  const Tensor& indptr() const { return indptr_; }
  const Tensor& indices() const { return indices_; }
  const Tensor& weights() const { return weights_; }
  // The graph's weight table (CscGraph::weight_alias, rejection_fanouts),
  // placed with the weights: weighted sampling without replacement draws
  // from it. weight_alias is an int64 tensor holding the uint64 columns.
  const Tensor& weight_alias() const { return weight_alias_; }
  const Tensor& rejection_fanouts() const { return rejection_fanouts_; }

 private:
  DeviceRuntime* runtime_ = nullptr;
  int device_ = 0;
  GraphPlacement placement_ = GraphPlacement::kDevice;
  int64_t num_nodes_ = 0;
  int64_t max_degree_ = 0;
  bool has_weights_ = false;  // a weighted graph may have no edges at all
  Tensor indptr_, indices_, weights_, weight_alias_, rejection_fanouts_;
};

// `size` int64 words of device memory: the first words of a workspace buffer.
struct DeviceWords {
  int64_t* data = nullptr;
  int64_t size = 0;
  BufferUse use() const { return BufferUse{data, static_cast<size_t>(size) * sizeof(int64_t)}; }
};

// The device buffers of the multi-hop sampler, kept from hop to hop and from
// call to call: once a workspace has held a minibatch as large, a call
// allocates no device memory (cudaMalloc) and frees none (cudaFree, which
// waits for the device), the prefix sums' scratch included.
// One call at a time may use a workspace; its buffers stay on the device
// of their first use until it is destroyed, so it holds each buffer's
// largest size so far.
class DeviceSamplingWorkspace {
 public:
  // The scratch every hop reuses (sampling, then compaction).
  enum Buffer : int {
    kSampleKeys,  // sampling
    kChunkOffsets,
    kChunkSurvivors,
    kChunkKeys,   // hubs' top-k in chunks (kernels::sampling::TopKChunks)
    kTableSlots,  // the hash table's keys, then its first positions
    kTableNewId,
    kIsFirst,
    kRank,          // compaction
    kUniqueCounts,  // per layer, its unique nodes' count, until the host reads it
    kScanScratch,   // lent to the prefix sums (kernels::ScanScratch)
    kReadback,      // arrays gathered for one copy to the host
    kNumBuffers
  };
  // A layer's own arrays, a set per layer, which the call leaves in place:
  // its seeds (the previous layer's unique nodes; the set after the last
  // layer holds the last unique nodes), its indptr, its picked edges, their
  // source nodes and those relabelled (SampledLayer's arrays).
  enum LayerArray : int { kSeeds, kIndptr, kEdges, kIndices, kCompacted, kNumLayerArrays };
  // How a buffer that is too small is replaced. kQuarterMore leaves room
  // for somewhat larger calls (a workspace kept from call to call). kExact
  // allocates what is asked (a workspace for one call: compute-sanitizer
  // then sees a write past the end of the array that sized the buffer; a
  // later hop that needs less uses its first words). The hash tables'
  // sizes are powers of two and always exact: the next size up doubles
  // anyway.
  enum class Growth { kQuarterMore, kExact };

  // A hop whose seeds, picks and chunk survivors fit this many words by
  // their bound (known on the host before the device counts them) is sized
  // by the bound and queued without a wait; a larger one waits once for
  // its counts (a round trip on a GPU) and takes only what they need. The
  // default, 2^21 words, lets each hop of a [15, 10, 5] minibatch from 1024
  // seeds run without a wait; the workspace then holds 176 MB (uniform)
  // to 240 MB (weighted) on the benchmark graph, against 30 to 34 MB when
  // every hop waits (docs/sampling.md, "Device path").
  static constexpr int64_t kDefaultBoundedHopWords = int64_t{1} << 21;

  explicit DeviceSamplingWorkspace(Growth growth = Growth::kQuarterMore,
                                   int64_t bounded_hop_words = kDefaultBoundedHopWords)
      : growth_(growth), bounded_hop_words_(bounded_hop_words) {}
  // A copy would share the buffers (tensors share their storage).
  DeviceSamplingWorkspace(const DeviceSamplingWorkspace&) = delete;
  DeviceSamplingWorkspace& operator=(const DeviceSamplingWorkspace&) = delete;
  DeviceSamplingWorkspace(DeviceSamplingWorkspace&&) = default;
  DeviceSamplingWorkspace& operator=(DeviceSamplingWorkspace&&) = default;

  // The largest buffer, in words: a quarter more of it, in bytes, still
  // fits an int64.
  static constexpr int64_t kMaxWords = int64_t{1} << 58;
  // Layers (sets of LayerArray) a workspace holds at most.
  static constexpr int kMaxLayers = 1 << 16;

  // Returns the first `size` words of buffer `which` (0 <= size <= kMaxWords), on
  // `device` of `runtime`, replacing a smaller buffer as `Growth` says (its
  // contents are not kept). Buffers on another device or runtime are an
  // InvalidArgument error naming both.
  Result<DeviceWords> Words(Buffer which, int64_t size, DeviceRuntime& runtime, Device device);
  // The same for array `which` of layer `layer` (0 <= layer < kMaxLayers).
  Result<DeviceWords> LayerWords(int layer, LayerArray which, int64_t size, DeviceRuntime& runtime, Device device);
  // The first `size` words of that array as a 1-D int64 tensor sharing its
  // memory (Tensor::Prefix: it keeps the buffer alive, not its contents);
  // an empty tensor on `device` of `runtime` when the array holds none.
  // A size outside [0, the words it holds] is an InvalidArgument error.
  Result<Tensor> LayerTensor(int layer, LayerArray which, int64_t size, DeviceRuntime& runtime, Device device) const;
  // Page-locked host memory (pinned with `runtime`), a block per use, grown
  // as Words grows. Readbacks land in kReadback, so that a copy to the host
  // is the DMA alone (into pageable memory the driver would stage it, a
  // second host copy beside the caller's own); uploads leave from kUpload,
  // so that the copy is queued and the host does not wait for it.
  enum class Pinned : int { kReadback, kUpload };
  // Returns `size` words of block `which`.
  Result<int64_t*> PinnedHostWords(Pinned which, int64_t size, DeviceRuntime& runtime);
  int64_t bounded_hop_words() const { return bounded_hop_words_; }
  // The device allocations it has made, and the bytes it holds.
  int64_t allocations() const { return allocations_; }
  // The words buffer `which` holds (0 until first used).
  int64_t words(Buffer which) const { return buffers_[which].nbytes() / static_cast<int64_t>(sizeof(int64_t)); }
  size_t bytes() const;

 private:
  // Returns the first `size` words of `buffer`, replaced first when smaller.
  Result<DeviceWords> Grow(Tensor& buffer, bool exact, int64_t size, DeviceRuntime& runtime, Device device);

  Growth growth_;
  int64_t bounded_hop_words_;
  Tensor buffers_[kNumBuffers];
  std::vector<std::array<Tensor, kNumLayerArrays>> layers_;  // LayerWords, by layer
  Tensor pinned_[2];                                         // PinnedHostWords, by Pinned
  int64_t allocations_ = 0;
};

// A layer sampled on the device and left there: SampledLayer's arrays as
// 1-D int64 tensors on the graph's device, each sized as the host's would
// be, sharing a workspace's layer arrays (DeviceSamplingWorkspace::
// LayerTensor). Their contents hold until the workspace is next used.
struct DeviceSampledLayer {
  Tensor seeds;              // the previous layer's unique nodes
  Tensor indptr;             // seeds.numel() + 1 entries
  Tensor original_edge_ids;  // the picks
  Tensor indices;            // their source nodes
  Tensor compacted_indices;  // indices as positions in unique_nodes
  Tensor unique_nodes;       // the seeds, then the new nodes: the next layer's seeds
};

// Samples like SampleNeighbors, on the graph's device, in `stream`. The
// request is validated on the host before any launch, as on the CPU
// (ValidateSampleRequest: options.num_threads too, though it is not used).
// Picks that do not fit on the device fail with the runtime's error
// (DeviceError, cudaErrorMemoryAllocation) after SampledEdgesNeed's text.
Result<SampledSubgraph> SampleNeighborsOnDevice(const DeviceGraph& graph, const std::vector<int64_t>& seeds,
                                                int64_t fanout, uint32_t layer, const SamplingOptions& options,
                                                StreamHandle stream = nullptr);

// Computes UniqueAndCompact(seeds, indices) with kernels on `device` of
// `runtime`, in `stream`: the same unique order (seeds first, then first
// appearance), and the same refusal of negative ids (CheckCompactIds).
Result<UniqueAndCompactResult> UniqueAndCompactOnDevice(DeviceRuntime& runtime, int device,
                                                        const std::vector<int64_t>& seeds,
                                                        const std::vector<int64_t>& indices,
                                                        StreamHandle stream = nullptr);

// Samples like SampleMultiLayer, the whole request validated first
// (ValidateMultiLayerRequest), every hop (sampling and compaction) on the
// graph's device, in `stream`, in the buffers of `workspace` (a workspace
// of its own when null, kExact: the call then allocates its buffers and
// frees them), then read back to the host. The host waits for the device
// (DeviceRuntime::host_waits) once for every hop larger than the
// workspace's bounded_hop_words, and twice more: for the counts that size
// the layers, then for the layers; the seeds go up from pinned memory,
// queued.
Result<std::vector<SampledLayer>> SampleMultiLayerOnDevice(const DeviceGraph& graph, const std::vector<int64_t>& seeds,
                                                           const std::vector<int64_t>& fanouts,
                                                           const SamplingOptions& options,
                                                           StreamHandle stream = nullptr,
                                                           DeviceSamplingWorkspace* workspace = nullptr);

// Samples like SampleMultiLayerOnDevice and leaves the layers on the
// device, in `workspace`, for device consumers (a feature gather such as
// IndexSelectInto, a model): only the counts that size the arrays come
// back to the host (DeviceRuntime::bytes_to_host), at one wait for every
// hop larger than the workspace's bounded_hop_words and one more. The
// arrays are ready when it returns. With no seeds, every
// array is empty (indptr too) and nothing touches the device.
Result<std::vector<DeviceSampledLayer>> SampleMultiLayerKeptOnDevice(
    const DeviceGraph& graph, const std::vector<int64_t>& seeds, const std::vector<int64_t>& fanouts,
    const SamplingOptions& options, StreamHandle stream, DeviceSamplingWorkspace& workspace);

// Reads layers kept on the device (SampleMultiLayerKeptOnDevice from
// `seeds`, with `workspace`) back to the host, in `stream`, with one wait:
// the layers SampleMultiLayerOnDevice would have returned. The kept layers
// stay readable on the device (only the workspace's readback buffers are
// used). Layers that do not start from `seeds` are an InvalidArgument
// error naming both counts.
Result<std::vector<SampledLayer>> ReadLayersBack(const std::vector<DeviceSampledLayer>& kept,
                                                 const std::vector<int64_t>& seeds, StreamHandle stream,
                                                 DeviceSamplingWorkspace& workspace);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_SAMPLING_DEVICE_SAMPLING_H_
