// Implements device sampling: per hop, per-seed pick counts, their prefix
// sum on the device for the output offsets, then the picks; the compactor's
// hash table and ranks on the device; and the multi-hop loop with every
// hop's inputs left on the device, in the buffers of a workspace.
#include "reference/sampling/device_sampling.h"

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>

#include "kernels/compact_kernels.cuh"
#include "kernels/launch.h"
#include "kernels/sampling_kernels.cuh"
#include "kernels/scan.h"
#include "reference/sampling/unique_and_compact.h"

namespace faultline {
namespace {

// Places a host vector for the kernels: a device copy, or a pinned host copy.
template <typename T>
Result<Tensor> Place(const std::vector<T>& values, DeviceRuntime& runtime, GraphPlacement placement, int device) {
  FL_ASSIGN_OR_RETURN(Tensor host, Tensor::FromVector(values));
  if (placement == GraphPlacement::kDevice) return host.To(Device::Cuda(device), &runtime);
  if (host.nbytes() > 0) FL_RETURN_IF_ERROR(host.Pin(runtime));
  return host;
}

template <typename T>
const T* Data(const Tensor& t) {
  return static_cast<const T*>(t.raw_data());
}

}  // namespace

Result<DeviceGraph> DeviceGraph::Create(const CscGraph& graph, DeviceRuntime& runtime, GraphPlacement placement,
                                        int device) {
  if (runtime.kind() == RuntimeKind::kCpu) {
    return InvalidArgumentError("DeviceGraph::Create: runtime is cpu; expected simcuda or cuda");
  }
  DeviceGraph g;
  g.runtime_ = &runtime;
  g.device_ = device;
  g.placement_ = placement;
  g.num_nodes_ = graph.num_nodes();
  const std::vector<int64_t>& indptr = graph.indptr();
  for (size_t v = 0; v + 1 < indptr.size(); ++v) g.max_degree_ = std::max(g.max_degree_, indptr[v + 1] - indptr[v]);
  g.has_weights_ = graph.has_weights();
  FL_ASSIGN_OR_RETURN(g.indptr_, Place(graph.indptr(), runtime, placement, device));
  FL_ASSIGN_OR_RETURN(g.indices_, Place(graph.indices(), runtime, placement, device));
  if (graph.has_weights()) {
    FL_ASSIGN_OR_RETURN(g.weights_, Place(graph.weights(), runtime, placement, device));
    // Tensors have no uint64: the alias columns travel as their bit patterns.
    std::vector<int64_t> alias_bits(graph.weight_alias().size());
    if (!alias_bits.empty()) {
      std::memcpy(alias_bits.data(), graph.weight_alias().data(), alias_bits.size() * sizeof(uint64_t));
    }
    FL_ASSIGN_OR_RETURN(g.weight_alias_, Place(alias_bits, runtime, placement, device));
    FL_ASSIGN_OR_RETURN(g.rejection_fanouts_, Place(graph.rejection_fanouts(), runtime, placement, device));
  }
  return g;
}

Result<DeviceWords> DeviceSamplingWorkspace::Words(Buffer which, int64_t size, DeviceRuntime& runtime, Device device) {
  if (which < 0 || which >= kNumBuffers || size < 0 || size > kMaxWords) {
    return InvalidArgumentError("DeviceSamplingWorkspace::Words: buffer " + std::to_string(which) + ", size " +
                                std::to_string(size) + "; expected a buffer below " + std::to_string(kNumBuffers) +
                                " and a size in [0, 2^58]");
  }
  const bool table = which == kTableSlots || which == kTableNewId;
  return Grow(buffers_[which], growth_ == Growth::kExact || table, size, runtime, device);
}

Result<DeviceWords> DeviceSamplingWorkspace::LayerWords(int layer, LayerArray which, int64_t size,
                                                        DeviceRuntime& runtime, Device device) {
  if (layer < 0 || layer >= kMaxLayers || which < 0 || which >= kNumLayerArrays || size < 0 || size > kMaxWords) {
    return InvalidArgumentError("DeviceSamplingWorkspace::LayerWords: layer " + std::to_string(layer) + ", array " +
                                std::to_string(which) + ", size " + std::to_string(size) + "; expected a layer below " +
                                std::to_string(kMaxLayers) + ", an array below " + std::to_string(kNumLayerArrays) +
                                " and a size in [0, 2^58]");
  }
  if (layers_.size() <= static_cast<size_t>(layer)) layers_.resize(static_cast<size_t>(layer) + 1);
  return Grow(layers_[static_cast<size_t>(layer)][which], growth_ == Growth::kExact, size, runtime, device);
}

Result<Tensor> DeviceSamplingWorkspace::LayerTensor(int layer, LayerArray which, int64_t size, DeviceRuntime& runtime,
                                                    Device device) const {
  const bool exists =
      layer >= 0 && static_cast<size_t>(layer) < layers_.size() && which >= 0 && which < kNumLayerArrays;
  const Tensor* held = exists ? &layers_[static_cast<size_t>(layer)][which] : nullptr;
  const int64_t held_words = held != nullptr ? held->numel() : 0;
  if (size < 0 || size > held_words) {
    return InvalidArgumentError("DeviceSamplingWorkspace::LayerTensor: layer " + std::to_string(layer) + ", array " +
                                std::to_string(which) + ", size " + std::to_string(size) + "; expected a size in [0, " +
                                std::to_string(held_words) + "] (the words it holds)");
  }
  if (held_words == 0) return Tensor::Empty(DType::kInt64, {0}, device, &runtime);
  return held->Prefix(size);
}

Result<DeviceWords> DeviceSamplingWorkspace::Grow(Tensor& buffer, bool exact, int64_t size, DeviceRuntime& runtime,
                                                  Device device) {
  // The first buffer held on another device or runtime, if any.
  const Tensor* other = [&]() -> const Tensor* {
    auto elsewhere = [&](const Tensor& held) {
      return held.numel() > 0 && (held.device() != device || held.runtime() != &runtime);
    };
    for (const Tensor& held : buffers_) {
      if (elsewhere(held)) return &held;
    }
    for (const auto& layer : layers_) {
      for (const Tensor& held : layer) {
        if (elsewhere(held)) return &held;
      }
    }
    return nullptr;
  }();
  if (other != nullptr) {
    return InvalidArgumentError("DeviceSamplingWorkspace: holds buffers on " + other->device().ToString() + " of " +
                                other->runtime()->name() + "; asked for " + device.ToString() + " of " +
                                runtime.name());
  }
  if (buffer.numel() < size) {
    const int64_t words = exact ? size : size + size / 4;
    buffer = Tensor();  // free the old one first: the device holds one of the two at a time
    FL_ASSIGN_OR_RETURN(buffer, Tensor::Empty(DType::kInt64, {words}, device, &runtime));
    ++allocations_;
  }
  return DeviceWords{size == 0 ? nullptr : static_cast<int64_t*>(buffer.raw_data()), size};
}

Result<int64_t*> DeviceSamplingWorkspace::PinnedHostWords(Pinned which, int64_t size, DeviceRuntime& runtime) {
  if (size <= 0 || size > kMaxWords) {
    return InvalidArgumentError("DeviceSamplingWorkspace::PinnedHostWords: size " + std::to_string(size) +
                                "; expected a size in [1, 2^58]");
  }
  Tensor& pinned = pinned_[static_cast<int>(which)];
  if (pinned.numel() < size) {
    pinned = Tensor();  // unpinned and freed first
    FL_ASSIGN_OR_RETURN(Tensor host,
                        Tensor::Empty(DType::kInt64, {growth_ == Growth::kExact ? size : size + size / 4}));
    FL_RETURN_IF_ERROR(host.Pin(runtime));
    pinned = std::move(host);
  }
  return static_cast<int64_t*>(pinned.raw_data());
}

size_t DeviceSamplingWorkspace::bytes() const {
  size_t total = 0;
  for (const Tensor& held : buffers_) total += held.nbytes();
  for (const auto& layer : layers_) {
    for (const Tensor& held : layer) total += held.nbytes();
  }
  return total;
}

namespace {

using Buffer = DeviceSamplingWorkspace::Buffer;
using LayerArray = DeviceSamplingWorkspace::LayerArray;

// A graph array's use by a kernel, or none when the kernel does not read it.
BufferUse GraphBuffer(const Tensor& array, bool read) { return read ? array.buffer() : BufferUse{nullptr, 0}; }

// A hop sampled on the device, left in the workspace: its indptr (one entry
// per seed and a trailing total), the picked edges' ids and their source
// nodes.
struct DeviceHop {
  DeviceWords indptr, edges, indices;
};

// Copies device arrays to the host with one host wait: several are first
// gathered in the workspace's readback buffer by device-to-device copies
// (queued, no wait), then copied into its pinned host words (queued after
// the stream's kernels: into pinned memory the copy is asynchronous), then
// one stream wait, and each array is copied out of the pinned words (the
// one host copy, which the driver would make anyway from its staging
// buffer into pageable memory). Each wait is a round trip on a GPU
// (DeviceRuntime::host_waits).
Result<std::vector<std::vector<int64_t>>> ReadBack(const std::vector<DeviceWords>& arrays, DeviceSamplingWorkspace& ws,
                                                   DeviceRuntime& rt, Device device, StreamHandle stream) {
  int64_t total = 0, nonempty = 0;
  for (const DeviceWords& a : arrays) {
    total += a.size;
    nonempty += a.size > 0 ? 1 : 0;
  }
  const int64_t* from = nullptr;
  for (const DeviceWords& a : arrays) from = a.size > 0 ? a.data : from;
  if (nonempty > 1) {
    FL_ASSIGN_OR_RETURN(DeviceWords packed, ws.Words(Buffer::kReadback, total, rt, device));
    int64_t at = 0;
    for (const DeviceWords& a : arrays) {
      FL_RETURN_IF_ERROR(rt.MemcpyAsync(packed.data + at, a.data, static_cast<size_t>(a.size) * sizeof(int64_t),
                                        MemcpyKind::kDeviceToDevice, stream));
      at += a.size;
    }
    from = packed.data;
  }
  const int64_t* host = nullptr;
  if (total > 0) {
    FL_ASSIGN_OR_RETURN(int64_t * pinned, ws.PinnedHostWords(DeviceSamplingWorkspace::Pinned::kReadback, total, rt));
    FL_RETURN_IF_ERROR(
        rt.MemcpyAsync(pinned, from, static_cast<size_t>(total) * sizeof(int64_t), MemcpyKind::kDeviceToHost, stream));
    FL_RETURN_IF_ERROR(rt.StreamSynchronize(stream));
    host = pinned;
  }
  std::vector<std::vector<int64_t>> out;
  int64_t at = 0;
  for (const DeviceWords& a : arrays) {
    out.emplace_back(host + at, host + at + a.size);
    at += a.size;
  }
  return out;
}

// The word after an exclusive sum's n inputs: its total.
DeviceWords TotalOf(const DeviceWords& sum, int64_t n) { return DeviceWords{sum.data + n, 1}; }

// Host arrays to copy to the device, each into its array of the
// workspace's layer 0.
struct Upload {
  LayerArray into;
  const std::vector<int64_t>* values;
};

// Copies each upload into its array of `ws`, in `stream` (the kernels
// that read them run there): the values are gathered in the workspace's
// pinned upload words, and the copies from there are queued without a wait
// (from pageable memory the host would wait for them). The pinned words
// are free again once the host has next waited for the stream, which every
// call does before it returns.
Result<std::vector<DeviceWords>> CopyToDevice(DeviceSamplingWorkspace& ws, std::initializer_list<Upload> uploads,
                                              DeviceRuntime& rt, Device device, StreamHandle stream) {
  int64_t total = 0;
  for (const Upload& u : uploads) total += static_cast<int64_t>(u.values->size());
  int64_t* pinned = nullptr;
  if (total > 0) {
    FL_ASSIGN_OR_RETURN(pinned, ws.PinnedHostWords(DeviceSamplingWorkspace::Pinned::kUpload, total, rt));
  }
  std::vector<DeviceWords> out;
  for (const Upload& u : uploads) {
    const auto size = static_cast<int64_t>(u.values->size());
    FL_ASSIGN_OR_RETURN(DeviceWords words, ws.LayerWords(0, u.into, size, rt, device));
    if (size > 0) {
      std::memcpy(pinned, u.values->data(), static_cast<size_t>(size) * sizeof(int64_t));
      FL_RETURN_IF_ERROR(rt.MemcpyAsync(words.data, pinned, static_cast<size_t>(size) * sizeof(int64_t),
                                        MemcpyKind::kHostToDevice, stream));
      pinned += size;
    }
    out.push_back(words);
  }
  return out;
}

// Lends the workspace's scan scratch to an exclusive sum of n words.
Result<kernels::ScanScratch> ScanScratchIn(DeviceSamplingWorkspace& ws, int64_t n, DeviceRuntime& rt, Device device) {
  FL_ASSIGN_OR_RETURN(const size_t bytes, kernels::ExclusiveSumScratchBytes(rt, n));
  const int64_t words = std::max<int64_t>(1, static_cast<int64_t>((bytes + sizeof(int64_t) - 1) / sizeof(int64_t)));
  FL_ASSIGN_OR_RETURN(DeviceWords scratch, ws.Words(Buffer::kScanScratch, words, rt, device));
  return kernels::ScanScratch{scratch.data, static_cast<size_t>(words) * sizeof(int64_t)};
}

// A hop whose picks are counted on the device: the sampling parameters,
// the counts' exclusive sum (the output's indptr, one word past the
// counted seeds) and, in the top-k modes, the chunks' offsets likewise.
struct CountedHop {
  kernels::sampling::SamplingParams params;
  int slot = 0;  // the workspace layer its arrays go to
  bool top_k = false;
  DeviceWords indptr, chunk_offsets;
  // What the host reads before it samples: the picks' total, and the
  // chunks' total in the top-k modes.
  std::vector<DeviceWords> Totals() const {
    std::vector<DeviceWords> totals = {TotalOf(indptr, indptr.size - 1)};
    if (top_k) totals.push_back(TotalOf(chunk_offsets, chunk_offsets.size - 1));
    return totals;
  }
};

// Queues the counts of `seeds` (at least one word, on the graph's device,
// in range: the caller checked them) and their exclusive sums, into the
// indptr of the workspace's layer `slot`. With `live_seeds` (a word on the device)
// only that many of the seeds' words are seeds: the rest count 0, so that
// the sums end in the live seeds' totals. The caller holds the device
// guard.
Result<CountedHop> CountHopOnDevice(const DeviceGraph& graph, const DeviceWords& seeds, const DeviceWords& live_seeds,
                                    int64_t fanout, uint32_t layer, const SamplingOptions& options, int slot,
                                    StreamHandle stream, DeviceSamplingWorkspace& ws) {
  DeviceRuntime& rt = graph.runtime();
  const Device device = Device::Cuda(graph.device());
  const bool weighted = options.weighted;
  const int64_t n = seeds.size;
  CountedHop hop;
  hop.slot = slot;
  // n counts and a zero (SampleCountKernel), then their exclusive sum in
  // place: the output's indptr.
  FL_ASSIGN_OR_RETURN(hop.indptr, ws.LayerWords(slot, LayerArray::kIndptr, n + 1, rt, device));

  kernels::sampling::SamplingParams& params = hop.params;
  params.indptr = Data<int64_t>(graph.indptr());
  params.weights = weighted ? Data<float>(graph.weights()) : nullptr;
  params.weight_alias = weighted ? Data<uint64_t>(graph.weight_alias()) : nullptr;
  params.rejection_fanouts = weighted ? Data<int32_t>(graph.rejection_fanouts()) : nullptr;
  params.fanout = fanout;
  params.replace = options.replace;
  params.weighted = weighted;
  params.rng_seed = options.rng_seed;
  params.layer = layer;

  // Per seed, its chunks (0 unless split), then their exclusive sum: chunk
  // offsets, with a zero past the end as indptr.
  hop.top_k = kernels::sampling::MayUseKeyScratch(params);
  if (hop.top_k) {
    FL_ASSIGN_OR_RETURN(hop.chunk_offsets, ws.Words(Buffer::kChunkOffsets, n + 1, rt, device));
  }
  kernels::SampleCountKernel count_kernel{params,         seeds.data, n, hop.indptr.data, hop.chunk_offsets.data,
                                          live_seeds.data};
  FL_RETURN_IF_ERROR(kernels::LaunchKernel(
      rt, "SampleCountKernel", kernels::LaunchFor(static_cast<uint64_t>(n), 128, stream), count_kernel,
      {graph.indptr().buffer(), GraphBuffer(graph.weights(), weighted), GraphBuffer(graph.weight_alias(), weighted),
       GraphBuffer(graph.rejection_fanouts(), weighted), seeds.use(), hop.indptr.use(), hop.chunk_offsets.use(),
       live_seeds.use()},
      &kernels::LaunchSampleCountOnCuda));
  FL_ASSIGN_OR_RETURN(const kernels::ScanScratch scan_scratch, ScanScratchIn(ws, n + 1, rt, device));
  FL_RETURN_IF_ERROR(kernels::ExclusiveSum(rt, hop.indptr.data, hop.indptr.data, n + 1, stream, scan_scratch));
  if (hop.top_k) {
    FL_RETURN_IF_ERROR(
        kernels::ExclusiveSum(rt, hop.chunk_offsets.data, hop.chunk_offsets.data, n + 1, stream, scan_scratch));
  }
  return hop;
}

// Samples the n = seeds.size seeds of a counted hop, whose totals the host
// has read (num_edges picks, num_chunks chunks), into its workspace layer: the
// picks, and in the top-k modes first a hub's edges split into chunks, each
// keeping its own top-k on a thread of its own (kernels::sampling::
// TopKChunks), so that no thread walks a whole hub. The caller holds the
// device guard.
Result<DeviceHop> SampleCountedHopOnDevice(const DeviceGraph& graph, const DeviceWords& seeds,
                                           const CountedHop& counted, int64_t num_edges, int64_t num_chunks,
                                           StreamHandle stream, DeviceSamplingWorkspace& ws) {
  DeviceRuntime& rt = graph.runtime();
  const Device device = Device::Cuda(graph.device());
  const kernels::sampling::SamplingParams& params = counted.params;
  const int64_t n = seeds.size, fanout = params.fanout;
  DeviceHop hop;
  hop.indptr = DeviceWords{counted.indptr.data, n + 1};
  if (num_edges == 0) return hop;  // no seed has an edge to split

  // Picks that do not fit fail here, named as the CPU reference names them
  // (its Unavailable error, the runtime's DeviceError here).
  const auto named = [&](Result<DeviceWords> words) -> Result<DeviceWords> {
    if (words.ok()) return words;
    return words.status().WithContext(SampledEdgesNeed(n, fanout, static_cast<uint64_t>(num_edges)));
  };
  FL_ASSIGN_OR_RETURN(hop.edges, named(ws.LayerWords(counted.slot, LayerArray::kEdges, num_edges, rt, device)));
  FL_ASSIGN_OR_RETURN(hop.indices, named(ws.LayerWords(counted.slot, LayerArray::kIndices, num_edges, rt, device)));
  // One 16-byte SampleKey per output slot, held as two int64 words, for the
  // top-k modes only: the others (Floyd, with replacement, fanout -1) never
  // read them, and a fanout -1 hop would otherwise need twice its output.
  static_assert(sizeof(kernels::sampling::SampleKey) == 2 * sizeof(int64_t), "SampleKey layout");
  DeviceWords keys;
  if (counted.top_k) {
    FL_ASSIGN_OR_RETURN(keys, named(ws.Words(Buffer::kSampleKeys, 2 * num_edges, rt, device)));
  }
  const bool weighted = params.weighted;
  const BufferUse indptr_use = graph.indptr().buffer();
  const BufferUse weights_use = GraphBuffer(graph.weights(), weighted);
  const BufferUse alias_use = GraphBuffer(graph.weight_alias(), weighted);
  const BufferUse fanouts_use = GraphBuffer(graph.rejection_fanouts(), weighted);
  const DeviceWords chunk_offsets = counted.chunk_offsets;
  DeviceWords survivors, chunk_keys;
  if (num_chunks > 0) {
    // fanout survivors (and keys) per chunk: per split seed, at most an
    // eighth of its edges plus one fanout (TopKChunkEdges).
    FL_ASSIGN_OR_RETURN(survivors, named(ws.Words(Buffer::kChunkSurvivors, num_chunks * fanout, rt, device)));
    FL_ASSIGN_OR_RETURN(chunk_keys, named(ws.Words(Buffer::kChunkKeys, 2 * num_chunks * fanout, rt, device)));
    kernels::SampleTopKChunksKernel chunk_kernel{params,
                                                 seeds.data,
                                                 n,
                                                 chunk_offsets.data,
                                                 num_chunks,
                                                 survivors.data,
                                                 reinterpret_cast<kernels::sampling::SampleKey*>(chunk_keys.data)};
    FL_RETURN_IF_ERROR(kernels::LaunchKernel(
        rt, "SampleTopKChunksKernel", kernels::LaunchFor(static_cast<uint64_t>(num_chunks), 128, stream), chunk_kernel,
        {indptr_use, weights_use, alias_use, fanouts_use, seeds.use(), chunk_offsets.use(), survivors.use(),
         chunk_keys.use()},
        &kernels::LaunchSampleTopKChunksOnCuda));
  }
  kernels::SampleSeedsKernel sample_kernel{params,
                                           Data<int64_t>(graph.indices()),
                                           seeds.data,
                                           n,
                                           hop.indptr.data,
                                           hop.edges.data,
                                           hop.indices.data,
                                           reinterpret_cast<kernels::sampling::SampleKey*>(keys.data),
                                           num_chunks > 0 ? chunk_offsets.data : nullptr,
                                           survivors.data};
  FL_RETURN_IF_ERROR(kernels::LaunchKernel(
      rt, "SampleSeedsKernel", kernels::LaunchFor(static_cast<uint64_t>(n), 128, stream), sample_kernel,
      {indptr_use, weights_use, alias_use, fanouts_use, graph.indices().buffer(), seeds.use(), hop.indptr.use(),
       hop.edges.use(), hop.indices.use(), keys.use(), chunk_offsets.use(), survivors.use()},
      &kernels::LaunchSampleSeedsOnCuda));
  return hop;
}

// One hop on its own: counted, one wait for its totals, then sampled.
Result<DeviceHop> SampleHopOnDevice(const DeviceGraph& graph, const DeviceWords& seeds, int64_t fanout, uint32_t layer,
                                    const SamplingOptions& options, StreamHandle stream, DeviceSamplingWorkspace& ws) {
  FL_ASSIGN_OR_RETURN(const CountedHop counted,
                      CountHopOnDevice(graph, seeds, DeviceWords{}, fanout, layer, options, /*slot=*/0, stream, ws));
  const Device device = Device::Cuda(graph.device());
  FL_ASSIGN_OR_RETURN(const std::vector<std::vector<int64_t>> totals,
                      ReadBack(counted.Totals(), ws, graph.runtime(), device, stream));
  return SampleCountedHopOnDevice(graph, seeds, counted, totals[0][0], counted.top_k ? totals[1][0] : 0, stream, ws);
}

// A hop compacted on the device, left in the workspace: room for its
// unique nodes (as many words as it has seeds and indices, at most
// max_unique), their count (one word on the device), and the positions of
// its indices among them.
struct DeviceCompaction {
  DeviceWords unique_room, unique_count, compacted;
};

// Words of the device that CompactOnDevice compacts: `words`, of which the
// first *live (a count the device wrote) are ids, or all when live is null.
struct LiveWords {
  DeviceWords words;
  const int64_t* live = nullptr;
};

// UniqueAndCompact of `seeds` and `indices` (non-negative: checked by the
// caller with CheckCompactIds, or node ids of the graph; at most max_unique
// distinct ones), on the device, into the workspace (the relabelled indices
// into layer `slot`, the unique nodes into layer slot + 1's seeds): a hash
// table of first positions, the first occurrences ranked by an exclusive
// sum, then the unique nodes and the relabelled indices. Nothing waits for
// the device: the unique nodes get room for every input word (up to
// max_unique), and their count stays on the device for the caller to read
// when it next waits: in the ranks' last word, or in `count_into` (a
// device word that outlives them) when given. The caller holds the device
// guard.
Result<DeviceCompaction> CompactOnDevice(DeviceRuntime& rt, Device device, const LiveWords& seeds,
                                         const LiveWords& indices, int64_t max_unique, int slot, StreamHandle stream,
                                         DeviceSamplingWorkspace& ws, int64_t* count_into = nullptr) {
  const int64_t n = seeds.words.size + indices.words.size;
  if (n == 0) return DeviceCompaction{};
  const int64_t room = std::min(n, max_unique);
  uint64_t capacity = 1;
  while (capacity < 2 * static_cast<uint64_t>(room)) capacity <<= 1;
  const int64_t cap = static_cast<int64_t>(capacity);
  // Keys, then first positions, in one buffer; ClearTableKernel frees the
  // slots the live positions use (NodeTable::For) on the device, rather
  // than a copy from the host.
  FL_ASSIGN_OR_RETURN(DeviceWords slots, ws.Words(Buffer::kTableSlots, 2 * cap, rt, device));
  const DeviceWords keys{slots.data, cap}, first{slots.data + cap, cap};
  FL_ASSIGN_OR_RETURN(DeviceWords new_id, ws.Words(Buffer::kTableNewId, cap, rt, device));
  // n marks and a zero (MarkFirstKernel), whose exclusive sum ranks the
  // unique nodes.
  FL_ASSIGN_OR_RETURN(DeviceWords is_first, ws.Words(Buffer::kIsFirst, n + 1, rt, device));

  const DeviceWords& s = seeds.words;
  const DeviceWords& i = indices.words;
  const kernels::Positions positions{s.data, s.size, i.data, i.size, seeds.live, indices.live};
  const kernels::NodeTable table{reinterpret_cast<unsigned long long*>(keys.data),
                                 reinterpret_cast<unsigned long long*>(first.data), new_id.data, capacity};
  const auto launch = kernels::LaunchFor(static_cast<uint64_t>(n), 256, stream);
  const BufferUse live_seeds{seeds.live, seeds.live != nullptr ? sizeof(int64_t) : 0};
  const BufferUse live_indices{indices.live, indices.live != nullptr ? sizeof(int64_t) : 0};
  FL_RETURN_IF_ERROR(kernels::LaunchKernel(
      rt, "ClearTableKernel", kernels::LaunchFor(capacity, 256, stream), kernels::ClearTableKernel{positions, table},
      {live_seeds, live_indices, keys.use(), first.use()}, &kernels::LaunchClearTableOnCuda));
  FL_RETURN_IF_ERROR(kernels::LaunchKernel(
      rt, "InsertNodesKernel", launch, kernels::InsertNodesKernel{positions, table},
      {s.use(), i.use(), live_seeds, live_indices, keys.use(), first.use()}, &kernels::LaunchInsertNodesOnCuda));
  FL_RETURN_IF_ERROR(
      kernels::LaunchKernel(rt, "MarkFirstKernel", launch, kernels::MarkFirstKernel{positions, table, is_first.data},
                            {s.use(), i.use(), live_seeds, live_indices, keys.use(), first.use(), is_first.use()},
                            &kernels::LaunchMarkFirstOnCuda));

  FL_ASSIGN_OR_RETURN(DeviceWords rank, ws.Words(Buffer::kRank, n + 1, rt, device));
  FL_ASSIGN_OR_RETURN(const kernels::ScanScratch scan_scratch, ScanScratchIn(ws, n + 1, rt, device));
  FL_RETURN_IF_ERROR(kernels::ExclusiveSum(rt, is_first.data, rank.data, n + 1, stream, scan_scratch));
  FL_ASSIGN_OR_RETURN(DeviceWords unique, ws.LayerWords(slot + 1, LayerArray::kSeeds, room, rt, device));
  FL_RETURN_IF_ERROR(kernels::LaunchKernel(
      rt, "EmitUniqueKernel", launch,
      kernels::EmitUniqueKernel{positions, table, is_first.data, rank.data, unique.data, count_into},
      {s.use(), i.use(), keys.use(), first.use(), new_id.use(), is_first.use(), rank.use(), unique.use(),
       BufferUse{count_into, count_into != nullptr ? sizeof(int64_t) : 0}},
      &kernels::LaunchEmitUniqueOnCuda));
  const DeviceWords count = count_into != nullptr ? DeviceWords{count_into, 1} : TotalOf(rank, n);
  FL_ASSIGN_OR_RETURN(DeviceWords compacted, ws.LayerWords(slot, LayerArray::kCompacted, i.size, rt, device));
  if (i.size == 0) return DeviceCompaction{unique, count, compacted};
  FL_RETURN_IF_ERROR(kernels::LaunchKernel(
      rt, "RelabelKernel", kernels::LaunchFor(static_cast<uint64_t>(i.size), 256, stream),
      kernels::RelabelKernel{positions, table, compacted.data},
      {i.use(), live_seeds, live_indices, keys.use(), new_id.use(), compacted.use()}, &kernels::LaunchRelabelOnCuda));
  return DeviceCompaction{unique, count, compacted};
}

// Runs `body`, which queues work in `stream` that uses the workspace's
// memory; when it fails, waits for the stream before returning its error:
// what it queued may still use the workspace, which the caller may free or
// reuse on another stream next. A failed wait adds nothing to the error.
template <typename Body>
auto WaitingOnError(DeviceRuntime& rt, StreamHandle stream, const Body& body) -> decltype(body()) {
  auto result = body();
  if (!result.ok()) (void)rt.StreamSynchronize(stream);
  return result;
}

}  // namespace

Result<SampledSubgraph> SampleNeighborsOnDevice(const DeviceGraph& graph, const std::vector<int64_t>& seeds,
                                                int64_t fanout, uint32_t layer, const SamplingOptions& options,
                                                StreamHandle stream) {
  FL_RETURN_IF_ERROR(ValidateSampleRequest(graph.num_nodes(), graph.has_weights(), seeds, fanout, options));
  SampledSubgraph out;
  out.seeds = seeds;
  out.indptr.assign(seeds.size() + 1, 0);
  if (seeds.empty()) return out;
  DeviceRuntime& rt = graph.runtime();
  const Device device = Device::Cuda(graph.device());
  DeviceGuard guard(rt, graph.device());
  FL_RETURN_IF_ERROR(guard.status());
  DeviceSamplingWorkspace ws(DeviceSamplingWorkspace::Growth::kExact);
  return WaitingOnError(rt, stream, [&]() -> Result<SampledSubgraph> {
    FL_ASSIGN_OR_RETURN(const std::vector<DeviceWords> uploaded,
                        CopyToDevice(ws, {Upload{LayerArray::kSeeds, &seeds}}, rt, device, stream));
    FL_ASSIGN_OR_RETURN(DeviceHop hop, SampleHopOnDevice(graph, uploaded[0], fanout, layer, options, stream, ws));
    if (hop.edges.size == 0) return out;
    FL_ASSIGN_OR_RETURN(std::vector<std::vector<int64_t>> read,
                        ReadBack({hop.indptr, hop.edges, hop.indices}, ws, rt, device, stream));
    out.indptr = std::move(read[0]);
    out.original_edge_ids = std::move(read[1]);
    out.indices = std::move(read[2]);
    return out;
  });
}

Result<UniqueAndCompactResult> UniqueAndCompactOnDevice(DeviceRuntime& rt, int device_index,
                                                        const std::vector<int64_t>& seeds,
                                                        const std::vector<int64_t>& indices, StreamHandle stream) {
  FL_RETURN_IF_ERROR(CheckCompactIds(seeds, indices));
  UniqueAndCompactResult out;
  if (seeds.empty() && indices.empty()) return out;
  const Device device = Device::Cuda(device_index);
  DeviceGuard guard(rt, device_index);
  FL_RETURN_IF_ERROR(guard.status());
  DeviceSamplingWorkspace ws(DeviceSamplingWorkspace::Growth::kExact);
  return WaitingOnError(rt, stream, [&]() -> Result<UniqueAndCompactResult> {
    FL_ASSIGN_OR_RETURN(const std::vector<DeviceWords> uploaded,
                        CopyToDevice(ws, {Upload{LayerArray::kSeeds, &seeds}, Upload{LayerArray::kIndices, &indices}},
                                     rt, device, stream));
    const int64_t inputs = uploaded[0].size + uploaded[1].size;
    FL_ASSIGN_OR_RETURN(DeviceCompaction compacted, CompactOnDevice(rt, device, LiveWords{uploaded[0]},
                                                                    LiveWords{uploaded[1]}, inputs, 0, stream, ws));
    FL_ASSIGN_OR_RETURN(std::vector<std::vector<int64_t>> count,
                        ReadBack({compacted.unique_count}, ws, rt, device, stream));
    FL_ASSIGN_OR_RETURN(
        std::vector<std::vector<int64_t>> read,
        ReadBack({DeviceWords{compacted.unique_room.data, count[0][0]}, compacted.compacted}, ws, rt, device, stream));
    out.unique_nodes = std::move(read[0]);
    out.compacted_indices = std::move(read[1]);
    return out;
  });
}

namespace {

// A sampled layer's arrays in the workspace: DeviceSampledLayer's, as words.
struct LayerWordsOnDevice {
  DeviceWords seeds, indptr, edges, indices, compacted, unique_nodes;
};

// a * b, or kMax when that is larger (a, b >= 0).
int64_t ProductUpTo(int64_t a, int64_t b, int64_t max) {
  if (a == 0 || b == 0) return 0;
  return a > max / b ? max : a * b;
}

// The most picks and top-k chunks a hop of `num_seeds` seed words can make,
// known on the host before the device counts them, when `repeats` of the
// words repeat an earlier one (none in every hop after the first: its seeds
// are unique nodes). Per seed at most its fanout (every edge for fanout
// -1) and the chunks of the largest node; without replacement, the
// distinct seeds together at most every edge of the graph, and at most two
// chunks per TopKChunkEdges edges (a split node's ceil(degree / chunk) is
// at most 2 * floor(degree / chunk)); each repeat at most one seed's more.
struct HopBound {
  int64_t picks = 0, chunks = 0;
};

HopBound BoundHop(const DeviceGraph& graph, int64_t num_seeds, int64_t repeats,
                  const kernels::sampling::SamplingParams& params, bool top_k) {
  constexpr int64_t kMax = DeviceSamplingWorkspace::kMaxWords;
  const int64_t max_degree = graph.max_degree(), edges = graph.num_edges(), fanout = params.fanout;
  const int64_t distinct = num_seeds - repeats;
  // The distinct seeds' total, at most `all_distinct`, and the repeats' (each
  // at most `per_seed`), up to kMax.
  const auto total = [&](int64_t per_seed, int64_t all_distinct) {
    return std::min(
        std::min(ProductUpTo(distinct, per_seed, kMax), all_distinct) + ProductUpTo(repeats, per_seed, kMax), kMax);
  };
  int64_t per_seed = fanout < 0 ? max_degree : (params.replace ? fanout : std::min(fanout, max_degree));
  if (max_degree == 0) per_seed = 0;
  HopBound bound;
  bound.picks = params.replace ? ProductUpTo(num_seeds, per_seed, kMax) : total(per_seed, edges);
  if (top_k) {
    const int64_t chunk = kernels::sampling::TopKChunkEdges(params);
    const int64_t per_seed_chunks = max_degree > chunk ? (max_degree + chunk - 1) / chunk : 0;
    bound.chunks = total(per_seed_chunks, 2 * (edges / chunk) + 2);
  }
  return bound;
}

// How many of `seeds` repeat an earlier one.
int64_t Repeats(std::vector<int64_t> seeds) {
  std::sort(seeds.begin(), seeds.end());
  return static_cast<int64_t>(seeds.end() - std::unique(seeds.begin(), seeds.end()));
}

// A count the device wrote that the host has not read, and the host word
// that takes it once read.
struct PendingCount {
  DeviceWords count;
  int64_t* into;
};

// Reads every pending count, and `also`, with one wait, then clears them.
Status ReadPendingCounts(std::vector<PendingCount>& pending, DeviceSamplingWorkspace& ws, DeviceRuntime& rt,
                         Device device, StreamHandle stream) {
  std::vector<DeviceWords> counts;
  for (const PendingCount& p : pending) counts.push_back(p.count);
  FL_ASSIGN_OR_RETURN(const std::vector<std::vector<int64_t>> read, ReadBack(counts, ws, rt, device, stream));
  for (size_t i = 0; i < pending.size(); ++i) *pending[i].into = read[i][0];
  pending.clear();
  return OkStatus();
}

// Samples every hop of a validated request with seeds, on the device, in
// the workspace's layer arrays: hop k + 1 samples from hop k's unique nodes
// where the compactor left them (layer k + 1's seeds), and the compactor
// reads the sampled indices where the sampler left them. A hop's arrays
// are sized by its bound (BoundHop: seeds, picks, chunk survivors) when it
// fits the workspace's bounded_hop_words, and the kernels read the live
// counts on the device, so the hop is queued without a wait; otherwise the
// host waits once, for its totals and every count not read yet, and sizes
// it exactly. One more wait reads the counts left, which size the layers.
// The later hops' seeds are unique nodes of the graph, so only the first
// hop's are checked (ValidateMultiLayerRequest). The caller holds the
// device guard.
Result<std::vector<LayerWordsOnDevice>> SampleHopsOnDevice(const DeviceGraph& graph, const std::vector<int64_t>& seeds,
                                                           const std::vector<int64_t>& fanouts,
                                                           const SamplingOptions& options, StreamHandle stream,
                                                           DeviceSamplingWorkspace& ws) {
  DeviceRuntime& rt = graph.runtime();
  const Device device = Device::Cuda(graph.device());
  const int num_layers = static_cast<int>(fanouts.size());
  std::vector<LayerWordsOnDevice> layers(static_cast<size_t>(num_layers));
  // Per layer, its seeds and picks, once read; the last layer's unique nodes.
  std::vector<int64_t> seed_counts(static_cast<size_t>(num_layers)), picks(static_cast<size_t>(num_layers));
  seed_counts[0] = static_cast<int64_t>(seeds.size());
  int64_t last_unique = 0;
  std::vector<PendingCount> pending;
  FL_ASSIGN_OR_RETURN(const std::vector<DeviceWords> uploaded,
                      CopyToDevice(ws, {Upload{LayerArray::kSeeds, &seeds}}, rt, device, stream));
  // Each hop's unique count, kept until the host reads it (the ranks that
  // hold it are the next hop's).
  FL_ASSIGN_OR_RETURN(const DeviceWords unique_counts, ws.Words(Buffer::kUniqueCounts, num_layers, rt, device));
  DeviceWords seeds_dev = uploaded[0];
  DeviceWords live;  // hop k's seed count on the device, when the host has not read it
  for (int k = 0; k < num_layers; ++k) {
    const auto at = static_cast<size_t>(k);
    Status hop_status = [&]() -> Status {
      FL_ASSIGN_OR_RETURN(const CountedHop counted, CountHopOnDevice(graph, seeds_dev, live, fanouts[k],
                                                                     static_cast<uint32_t>(k), options, k, stream, ws));
      const DeviceWords picks_count = TotalOf(counted.indptr, seeds_dev.size);
      // Whether a hop's bound fits the workspace's bounded_hop_words.
      const auto fits = [&](const HopBound& bound) {
        const int64_t survivors =
            ProductUpTo(bound.chunks, std::max<int64_t>(counted.params.fanout, 0), DeviceSamplingWorkspace::kMaxWords);
        const int64_t limit = ws.bounded_hop_words();
        return seeds_dev.size <= limit && bound.picks <= limit - seeds_dev.size &&
               survivors <= limit - seeds_dev.size - bound.picks;
      };
      // A later hop's seeds are unique nodes. The first hop's may repeat:
      // how many do (a sort on the host, while the device counts) is only
      // worked out when the bound for any number of repeats does not fit.
      HopBound bound = BoundHop(graph, seeds_dev.size, k > 0 ? 0 : std::max<int64_t>(seeds_dev.size - 1, 0),
                                counted.params, counted.top_k);
      if (k == 0 && !fits(bound))
        bound = BoundHop(graph, seeds_dev.size, Repeats(seeds), counted.params, counted.top_k);
      const bool bounded = fits(bound);
      int64_t room = bound.picks, chunks_room = bound.chunks;
      if (live.size > 0) pending.push_back(PendingCount{live, &seed_counts[at]});
      if (!bounded) {
        int64_t chunks = 0;
        pending.push_back(PendingCount{picks_count, &room});
        if (counted.top_k) pending.push_back(PendingCount{counted.Totals()[1], &chunks});
        FL_RETURN_IF_ERROR(ReadPendingCounts(pending, ws, rt, device, stream));
        chunks_room = chunks;
        if (live.size > 0) seeds_dev.size = seed_counts[at];
        live = DeviceWords{};
      }
      FL_ASSIGN_OR_RETURN(DeviceHop hop,
                          SampleCountedHopOnDevice(graph, seeds_dev, counted, room, chunks_room, stream, ws));
      if (bounded) {
        pending.push_back(PendingCount{picks_count, &picks[at]});
      } else {
        picks[at] = room;
      }
      const LiveWords hop_seeds{seeds_dev, live.size > 0 ? live.data : nullptr};
      const LiveWords hop_indices{hop.indices, bounded ? picks_count.data : nullptr};
      FL_ASSIGN_OR_RETURN(DeviceCompaction compacted,
                          CompactOnDevice(rt, device, hop_seeds, hop_indices, graph.num_nodes(), k, stream, ws,
                                          unique_counts.data + k));
      layers[at] =
          LayerWordsOnDevice{seeds_dev, hop.indptr, hop.edges, hop.indices, compacted.compacted, DeviceWords{}};
      seeds_dev = compacted.unique_room;
      live = compacted.unique_count;
      return OkStatus();
    }();
    if (!hop_status.ok()) return hop_status.WithContext("layer " + std::to_string(k));
  }
  pending.push_back(PendingCount{live, &last_unique});
  FL_RETURN_IF_ERROR(ReadPendingCounts(pending, ws, rt, device, stream));
  // Every array as long as its counts say: layer k's seeds are layer k - 1's unique nodes.
  for (size_t k = 0; k < layers.size(); ++k) {
    LayerWordsOnDevice& layer = layers[k];
    layer.seeds.size = seed_counts[k];
    layer.indptr.size = seed_counts[k] + 1;
    layer.edges.size = layer.indices.size = layer.compacted.size = picks[k];
    const int64_t unique = k + 1 < layers.size() ? seed_counts[k + 1] : last_unique;
    layer.unique_nodes = DeviceWords{k + 1 < layers.size() ? layers[k + 1].seeds.data : seeds_dev.data, unique};
  }
  return layers;
}

}  // namespace

Result<std::vector<DeviceSampledLayer>> SampleMultiLayerKeptOnDevice(
    const DeviceGraph& graph, const std::vector<int64_t>& seeds, const std::vector<int64_t>& fanouts,
    const SamplingOptions& options, StreamHandle stream, DeviceSamplingWorkspace& workspace) {
  FL_RETURN_IF_ERROR(ValidateMultiLayerRequest(graph.num_nodes(), graph.has_weights(), seeds, fanouts, options));
  DeviceRuntime& rt = graph.runtime();
  const Device device = Device::Cuda(graph.device());
  std::vector<LayerWordsOnDevice> words(fanouts.size());  // with no seeds, every hop empty
  if (!seeds.empty()) {
    DeviceGuard guard(rt, graph.device());
    FL_RETURN_IF_ERROR(guard.status());
    FL_ASSIGN_OR_RETURN(words, WaitingOnError(rt, stream, [&] {
                          return SampleHopsOnDevice(graph, seeds, fanouts, options, stream, workspace);
                        }));
  }
  // Array `which` of workspace layer `layer_index`, as long as `array`.
  auto tensor = [&](int layer_index, LayerArray which, const DeviceWords& array) {
    return workspace.LayerTensor(layer_index, which, array.size, rt, device);
  };
  std::vector<DeviceSampledLayer> layers(words.size());
  for (size_t k = 0; k < words.size(); ++k) {
    const LayerWordsOnDevice& w = words[k];
    DeviceSampledLayer& layer = layers[k];
    const int at = static_cast<int>(k);
    FL_ASSIGN_OR_RETURN(layer.seeds, tensor(at, LayerArray::kSeeds, w.seeds));
    FL_ASSIGN_OR_RETURN(layer.indptr, tensor(at, LayerArray::kIndptr, w.indptr));
    FL_ASSIGN_OR_RETURN(layer.original_edge_ids, tensor(at, LayerArray::kEdges, w.edges));
    FL_ASSIGN_OR_RETURN(layer.indices, tensor(at, LayerArray::kIndices, w.indices));
    FL_ASSIGN_OR_RETURN(layer.compacted_indices, tensor(at, LayerArray::kCompacted, w.compacted));
    FL_ASSIGN_OR_RETURN(layer.unique_nodes, tensor(at + 1, LayerArray::kSeeds, w.unique_nodes));
  }
  return layers;
}

namespace {

// Reads every array of layers kept on the device, sampled from `seeds`, back
// to the host with one wait. The caller holds the device guard.
Result<std::vector<SampledLayer>> ReadBackLayerWords(const std::vector<LayerWordsOnDevice>& kept,
                                                     const std::vector<int64_t>& seeds, DeviceSamplingWorkspace& ws,
                                                     DeviceRuntime& rt, Device device, StreamHandle stream) {
  // Per layer its indptr, edges, indices and compacted indices, then its
  // unique nodes (the first layer's seeds are the caller's).
  std::vector<DeviceWords> arrays;
  for (const LayerWordsOnDevice& layer : kept) {
    arrays.insert(arrays.end(), {layer.indptr, layer.edges, layer.indices, layer.compacted, layer.unique_nodes});
  }
  FL_ASSIGN_OR_RETURN(std::vector<std::vector<int64_t>> read, ReadBack(arrays, ws, rt, device, stream));
  std::vector<SampledLayer> layers(kept.size());
  for (size_t k = 0; k < layers.size(); ++k) {
    SampledLayer& layer = layers[k];
    std::vector<int64_t>* from = &read[5 * k];
    layer.subgraph.seeds = k == 0 ? seeds : layers[k - 1].unique_nodes;
    layer.subgraph.indptr = std::move(from[0]);
    layer.subgraph.original_edge_ids = std::move(from[1]);
    layer.subgraph.indices = std::move(from[2]);
    layer.compacted_indices = std::move(from[3]);
    layer.unique_nodes = std::move(from[4]);
  }
  return layers;
}

// The layers of a request with no seeds: every hop empty, indptr [0].
std::vector<SampledLayer> LayersWithNoSeeds(size_t num_layers) {
  std::vector<SampledLayer> layers(num_layers);
  for (SampledLayer& layer : layers) layer.subgraph.indptr.assign(1, 0);
  return layers;
}

// The words of a kept tensor.
DeviceWords WordsOf(const Tensor& t) { return DeviceWords{static_cast<int64_t*>(t.raw_data()), t.numel()}; }

}  // namespace

Result<std::vector<SampledLayer>> ReadLayersBack(const std::vector<DeviceSampledLayer>& kept,
                                                 const std::vector<int64_t>& seeds, StreamHandle stream,
                                                 DeviceSamplingWorkspace& workspace) {
  if (kept.empty() || kept[0].seeds.numel() != static_cast<int64_t>(seeds.size())) {
    return InvalidArgumentError("ReadLayersBack: " + std::to_string(kept.size()) + " kept layers, the first with " +
                                std::to_string(kept.empty() ? 0 : kept[0].seeds.numel()) + " seeds, and " +
                                std::to_string(seeds.size()) +
                                " seeds given; expected the layers SampleMultiLayerKeptOnDevice sampled from them");
  }
  if (seeds.empty()) return LayersWithNoSeeds(kept.size());
  std::vector<LayerWordsOnDevice> words;
  for (const DeviceSampledLayer& layer : kept) {
    words.push_back(LayerWordsOnDevice{WordsOf(layer.seeds), WordsOf(layer.indptr), WordsOf(layer.original_edge_ids),
                                       WordsOf(layer.indices), WordsOf(layer.compacted_indices),
                                       WordsOf(layer.unique_nodes)});
  }
  const Device device = kept[0].indptr.device();
  DeviceRuntime& rt = *kept[0].indptr.runtime();
  DeviceGuard guard(rt, device.index);
  FL_RETURN_IF_ERROR(guard.status());
  return WaitingOnError(rt, stream, [&] { return ReadBackLayerWords(words, seeds, workspace, rt, device, stream); });
}

// The hops as SampleMultiLayerKeptOnDevice leaves them, then every array
// read back with one more wait.
Result<std::vector<SampledLayer>> SampleMultiLayerOnDevice(const DeviceGraph& graph, const std::vector<int64_t>& seeds,
                                                           const std::vector<int64_t>& fanouts,
                                                           const SamplingOptions& options, StreamHandle stream,
                                                           DeviceSamplingWorkspace* workspace) {
  FL_RETURN_IF_ERROR(ValidateMultiLayerRequest(graph.num_nodes(), graph.has_weights(), seeds, fanouts, options));
  if (seeds.empty()) return LayersWithNoSeeds(fanouts.size());
  DeviceRuntime& rt = graph.runtime();
  const Device device = Device::Cuda(graph.device());
  // The guard first, so that a workspace of the call's own is freed while
  // the graph's device is still current (freeing it after the guard put
  // the caller's device back could create a context there).
  DeviceGuard guard(rt, graph.device());
  FL_RETURN_IF_ERROR(guard.status());
  std::optional<DeviceSamplingWorkspace> own;
  DeviceSamplingWorkspace& ws =
      workspace != nullptr ? *workspace : own.emplace(DeviceSamplingWorkspace::Growth::kExact);
  return WaitingOnError(rt, stream, [&]() -> Result<std::vector<SampledLayer>> {
    FL_ASSIGN_OR_RETURN(const std::vector<LayerWordsOnDevice> kept,
                        SampleHopsOnDevice(graph, seeds, fanouts, options, stream, ws));
    return ReadBackLayerWords(kept, seeds, ws, rt, device, stream);
  });
}

}  // namespace faultline
