// Implements device sampling: per hop, per-seed pick counts, their prefix
// sum on the device for the output offsets, then the picks; the compactor's
// hash table and ranks on the device; and the multi-hop loop with every
// hop's inputs left on the device.
#include "reference/sampling/device_sampling.h"

#include <optional>
#include <string>

#include "kernels/compact_kernels.cuh"
#include "kernels/fill.h"
#include "kernels/launch.h"
#include "kernels/scan.h"
#include "kernels/sampling_kernels.cuh"
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
Result<std::vector<T>> CopyToHost(const Tensor& t) {
  FL_ASSIGN_OR_RETURN(Tensor host, t.Cpu());
  return host.ToVector<T>();
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
  g.has_weights_ = graph.has_weights();
  FL_ASSIGN_OR_RETURN(g.indptr_, Place(graph.indptr(), runtime, placement, device));
  FL_ASSIGN_OR_RETURN(g.indices_, Place(graph.indices(), runtime, placement, device));
  if (graph.has_weights()) {
    FL_ASSIGN_OR_RETURN(g.weights_, Place(graph.weights(), runtime, placement, device));
  }
  return g;
}

namespace {

// A hop sampled on the device, left there: its indptr (one entry per seed
// and a trailing total), the picked edges' ids and their source nodes.
struct DeviceHop {
  Tensor indptr, edges, indices;
  int64_t num_edges = 0;
};

// An empty int64 tensor on `device`, for arrays of no elements.
Result<Tensor> NoWords(DeviceRuntime& rt, Device device) { return Tensor::Empty(DType::kInt64, {0}, device, &rt); }

// Samples the `n` seeds at `seeds_dev` (n >= 1, on the graph's device, in
// range: the caller checked them) into device memory: per-seed counts,
// their exclusive sum on the device (only the total comes back, to size the
// output), then the picks. The caller holds the device guard.
Result<DeviceHop> SampleHopOnDevice(const DeviceGraph& graph, const Tensor& seeds_dev, int64_t n, int64_t fanout,
                                    uint32_t layer, const SamplingOptions& options, StreamHandle stream) {
  DeviceRuntime& rt = graph.runtime();
  const Device device = Device::Cuda(graph.device());
  const bool weighted = options.weighted;
  DeviceHop hop;
  // n counts and a trailing 0: their exclusive sum is the output's indptr.
  FL_ASSIGN_OR_RETURN(hop.indptr, Tensor::Empty(DType::kInt64, {n + 1}, device, &rt));
  auto* indptr_data = static_cast<int64_t*>(hop.indptr.raw_data());
  FL_RETURN_IF_ERROR(kernels::FillWords(rt, indptr_data + n, 1, 0, stream));

  kernels::sampling::SamplingParams params;
  params.indptr = Data<int64_t>(graph.indptr());
  params.weights = weighted ? Data<float>(graph.weights()) : nullptr;
  params.fanout = fanout;
  params.replace = options.replace;
  params.weighted = weighted;
  params.rng_seed = options.rng_seed;
  params.layer = layer;
  const BufferUse indptr_use = graph.indptr().buffer();
  const BufferUse weights_use = weighted ? graph.weights().buffer() : BufferUse{nullptr, 0};

  const auto launch = kernels::LaunchFor(static_cast<uint64_t>(n), 128, stream);
  kernels::SampleCountKernel count_kernel{params, Data<int64_t>(seeds_dev), n, indptr_data};
  FL_RETURN_IF_ERROR(kernels::LaunchKernel(rt, "SampleCountKernel", launch, count_kernel,
                                           {indptr_use, weights_use, seeds_dev.buffer(), hop.indptr.buffer()},
                                           &kernels::LaunchSampleCountOnCuda));
  FL_RETURN_IF_ERROR(kernels::ExclusiveSum(rt, indptr_data, indptr_data, n + 1, stream));
  FL_RETURN_IF_ERROR(rt.Memcpy(&hop.num_edges, indptr_data + n, sizeof(hop.num_edges), MemcpyKind::kDeviceToHost));
  if (hop.num_edges == 0) {
    FL_ASSIGN_OR_RETURN(hop.edges, NoWords(rt, device));
    FL_ASSIGN_OR_RETURN(hop.indices, NoWords(rt, device));
    return hop;
  }

  FL_ASSIGN_OR_RETURN(hop.edges, Tensor::Empty(DType::kInt64, {hop.num_edges}, device, &rt));
  FL_ASSIGN_OR_RETURN(hop.indices, Tensor::Empty(DType::kInt64, {hop.num_edges}, device, &rt));
  // One 16-byte SampleKey per output slot, held as two int64 words.
  static_assert(sizeof(kernels::sampling::SampleKey) == 2 * sizeof(int64_t), "SampleKey layout");
  FL_ASSIGN_OR_RETURN(Tensor scratch, Tensor::Empty(DType::kInt64, {2 * hop.num_edges}, device, &rt));
  kernels::SampleSeedsKernel sample_kernel{params,
                                           Data<int64_t>(graph.indices()),
                                           Data<int64_t>(seeds_dev),
                                           n,
                                           Data<int64_t>(hop.indptr),
                                           static_cast<int64_t*>(hop.edges.raw_data()),
                                           static_cast<int64_t*>(hop.indices.raw_data()),
                                           static_cast<kernels::sampling::SampleKey*>(scratch.raw_data())};
  FL_RETURN_IF_ERROR(kernels::LaunchKernel(
      rt, "SampleSeedsKernel", launch, sample_kernel,
      {indptr_use, weights_use, graph.indices().buffer(),
       seeds_dev.buffer(), hop.indptr.buffer(),
       hop.edges.buffer(), hop.indices.buffer(),
       scratch.buffer()},
      &kernels::LaunchSampleSeedsOnCuda));
  return hop;
}

// A hop compacted on the device, left there: its unique nodes and the
// positions of its indices among them.
struct DeviceCompaction {
  Tensor unique_nodes, compacted;
};

// UniqueAndCompact of the seeds and indices at `seeds_dev` and
// `indices_dev` (non-negative, checked by the caller), on the device: a hash
// table of first positions, the first occurrences ranked by an exclusive
// sum (only the count comes back, to size the output), then the unique
// nodes and the relabelled indices. The caller holds the device guard.
Result<DeviceCompaction> CompactOnDevice(DeviceRuntime& rt, Device device, const Tensor& seeds_dev, int64_t num_seeds,
                                         const Tensor& indices_dev, int64_t num_indices, StreamHandle stream) {
  DeviceCompaction out;
  const int64_t n = num_seeds + num_indices;
  if (n == 0) {
    FL_ASSIGN_OR_RETURN(out.unique_nodes, NoWords(rt, device));
    FL_ASSIGN_OR_RETURN(out.compacted, NoWords(rt, device));
    return out;
  }
  uint64_t capacity = 1;
  while (capacity < 2 * static_cast<uint64_t>(n)) capacity <<= 1;
  const int64_t cap = static_cast<int64_t>(capacity);
  // Free slots and "no position yet" are both all-ones words, filled on the
  // device rather than copied from the host (16 bytes per slot).
  FL_ASSIGN_OR_RETURN(Tensor keys, Tensor::Empty(DType::kInt64, {cap}, device, &rt));
  FL_ASSIGN_OR_RETURN(Tensor first, Tensor::Empty(DType::kInt64, {cap}, device, &rt));
  FL_RETURN_IF_ERROR(kernels::FillWords(rt, static_cast<int64_t*>(keys.raw_data()), capacity, -1, stream));
  FL_RETURN_IF_ERROR(kernels::FillWords(rt, static_cast<int64_t*>(first.raw_data()), capacity, -1, stream));
  FL_ASSIGN_OR_RETURN(Tensor new_id, Tensor::Empty(DType::kInt64, {cap}, device, &rt));
  // n marks and a trailing 0: their exclusive sum ranks the unique nodes.
  FL_ASSIGN_OR_RETURN(Tensor is_first, Tensor::Empty(DType::kInt64, {n + 1}, device, &rt));
  FL_RETURN_IF_ERROR(kernels::FillWords(rt, static_cast<int64_t*>(is_first.raw_data()) + n, 1, 0, stream));

  const kernels::Positions positions{Data<int64_t>(seeds_dev), num_seeds, Data<int64_t>(indices_dev), num_indices};
  const kernels::NodeTable table{static_cast<unsigned long long*>(keys.raw_data()),
                                 static_cast<unsigned long long*>(first.raw_data()),
                                 static_cast<int64_t*>(new_id.raw_data()), capacity};
  const BufferUse inputs[] = {seeds_dev.buffer(), indices_dev.buffer()};
  const BufferUse table_use[] = {keys.buffer(), first.buffer(), new_id.buffer()};
  const auto launch = kernels::LaunchFor(static_cast<uint64_t>(n), 256, stream);
  FL_RETURN_IF_ERROR(kernels::LaunchKernel(rt, "InsertNodesKernel", launch, kernels::InsertNodesKernel{positions, table},
                                           {inputs[0], inputs[1], table_use[0], table_use[1]},
                                           &kernels::LaunchInsertNodesOnCuda));
  FL_RETURN_IF_ERROR(kernels::LaunchKernel(
      rt, "MarkFirstKernel", launch,
      kernels::MarkFirstKernel{positions, table, static_cast<int64_t*>(is_first.raw_data())},
      {inputs[0], inputs[1], table_use[0], table_use[1], is_first.buffer()},
      &kernels::LaunchMarkFirstOnCuda));

  FL_ASSIGN_OR_RETURN(Tensor rank_dev, Tensor::Empty(DType::kInt64, {n + 1}, device, &rt));
  auto* rank_data = static_cast<int64_t*>(rank_dev.raw_data());
  FL_RETURN_IF_ERROR(kernels::ExclusiveSum(rt, Data<int64_t>(is_first), rank_data, n + 1, stream));
  int64_t num_unique = 0;
  FL_RETURN_IF_ERROR(rt.Memcpy(&num_unique, rank_data + n, sizeof(num_unique), MemcpyKind::kDeviceToHost));
  FL_ASSIGN_OR_RETURN(out.unique_nodes, Tensor::Empty(DType::kInt64, {num_unique}, device, &rt));
  FL_RETURN_IF_ERROR(kernels::LaunchKernel(
      rt, "EmitUniqueKernel", launch,
      kernels::EmitUniqueKernel{positions, table, Data<int64_t>(is_first), Data<int64_t>(rank_dev),
                                static_cast<int64_t*>(out.unique_nodes.raw_data())},
      {inputs[0], inputs[1], table_use[0], table_use[1], table_use[2], is_first.buffer(),
       rank_dev.buffer(), out.unique_nodes.buffer()},
      &kernels::LaunchEmitUniqueOnCuda));
  FL_ASSIGN_OR_RETURN(out.compacted, Tensor::Empty(DType::kInt64, {num_indices}, device, &rt));
  if (num_indices == 0) return out;
  FL_RETURN_IF_ERROR(kernels::LaunchKernel(
      rt, "RelabelKernel", kernels::LaunchFor(static_cast<uint64_t>(num_indices), 256, stream),
      kernels::RelabelKernel{table, Data<int64_t>(indices_dev), num_indices,
                             static_cast<int64_t*>(out.compacted.raw_data())},
      {inputs[1], table_use[0], table_use[2], out.compacted.buffer()},
      &kernels::LaunchRelabelOnCuda));
  return out;
}

// The device compactor's ids are non-negative: an error naming the first
// negative one of `ids` by its array and position.
Status CheckNonNegative(const std::vector<int64_t>& ids, const char* name) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0) return InvalidArgumentError(std::string(name) + "[" + std::to_string(i) + "] is negative");
  }
  return OkStatus();
}

}  // namespace

Result<SampledSubgraph> SampleNeighborsOnDevice(const DeviceGraph& graph, const std::vector<int64_t>& seeds,
                                                int64_t fanout, uint32_t layer, const SamplingOptions& options,
                                                StreamHandle stream) {
  FL_RETURN_IF_ERROR(
      ValidateSampleRequest(graph.num_nodes(), graph.has_weights(), seeds, fanout, options.weighted));
  SampledSubgraph out;
  out.seeds = seeds;
  out.indptr.assign(seeds.size() + 1, 0);
  if (seeds.empty()) return out;
  DeviceRuntime& rt = graph.runtime();
  DeviceGuard guard(rt, graph.device());
  FL_RETURN_IF_ERROR(guard.status());
  FL_ASSIGN_OR_RETURN(Tensor seeds_dev, Tensor::FromVectorOn(seeds, Device::Cuda(graph.device()), &rt));
  FL_ASSIGN_OR_RETURN(DeviceHop hop, SampleHopOnDevice(graph, seeds_dev, static_cast<int64_t>(seeds.size()), fanout,
                                                       layer, options, stream));
  if (hop.num_edges == 0) return out;
  FL_ASSIGN_OR_RETURN(out.indptr, CopyToHost<int64_t>(hop.indptr));
  FL_ASSIGN_OR_RETURN(out.original_edge_ids, CopyToHost<int64_t>(hop.edges));
  FL_ASSIGN_OR_RETURN(out.indices, CopyToHost<int64_t>(hop.indices));
  return out;
}

Result<UniqueAndCompactResult> UniqueAndCompactOnDevice(DeviceRuntime& rt, int device_index,
                                                        const std::vector<int64_t>& seeds,
                                                        const std::vector<int64_t>& indices, StreamHandle stream) {
  FL_RETURN_IF_ERROR(CheckNonNegative(seeds, "seeds"));
  FL_RETURN_IF_ERROR(CheckNonNegative(indices, "indices"));
  UniqueAndCompactResult out;
  if (seeds.empty() && indices.empty()) return out;
  const Device device = Device::Cuda(device_index);
  DeviceGuard guard(rt, device_index);
  FL_RETURN_IF_ERROR(guard.status());
  FL_ASSIGN_OR_RETURN(Tensor seeds_dev, Tensor::FromVectorOn(seeds, device, &rt));
  FL_ASSIGN_OR_RETURN(Tensor indices_dev, Tensor::FromVectorOn(indices, device, &rt));
  FL_ASSIGN_OR_RETURN(DeviceCompaction compacted,
                      CompactOnDevice(rt, device, seeds_dev, static_cast<int64_t>(seeds.size()), indices_dev,
                                      static_cast<int64_t>(indices.size()), stream));
  FL_ASSIGN_OR_RETURN(out.unique_nodes, CopyToHost<int64_t>(compacted.unique_nodes));
  FL_ASSIGN_OR_RETURN(out.compacted_indices, CopyToHost<int64_t>(compacted.compacted));
  return out;
}

// Every hop stays on the device: hop k + 1 samples from hop k's unique
// nodes where the compactor left them, and the compactor reads the sampled
// indices where the sampler left them. Each layer's arrays are copied back
// once, for the result (and the next hop's seeds are checked on that copy,
// as a hop sampled alone checks them). With no seeds nothing touches the
// device, as before.
Result<std::vector<SampledLayer>> SampleMultiLayerOnDevice(const DeviceGraph& graph,
                                                           const std::vector<int64_t>& seeds,
                                                           const std::vector<int64_t>& fanouts,
                                                           const SamplingOptions& options, StreamHandle stream) {
  DeviceRuntime& rt = graph.runtime();
  const Device device = Device::Cuda(graph.device());
  std::vector<SampledLayer> layers;
  layers.reserve(fanouts.size());  // the unique nodes returned stay where they are
  std::optional<DeviceGuard> guard;
  Tensor seeds_dev;  // the hop's seeds on the device: the last hop's unique nodes
  FL_RETURN_IF_ERROR(ChainLayers(seeds, fanouts,
                                 [&](const std::vector<int64_t>& layer_seeds, int64_t fanout,
                                     uint32_t layer) -> Result<const std::vector<int64_t>*> {
    FL_RETURN_IF_ERROR(
        ValidateSampleRequest(graph.num_nodes(), graph.has_weights(), layer_seeds, fanout, options.weighted));
    SampledLayer& out = layers.emplace_back();
    out.subgraph.seeds = layer_seeds;
    out.subgraph.indptr.assign(1, 0);
    if (layer_seeds.empty()) return &out.unique_nodes;  // and so is every later hop
    if (layer == 0) {
      guard.emplace(rt, graph.device());
      FL_RETURN_IF_ERROR(guard->status());
      FL_ASSIGN_OR_RETURN(seeds_dev, Tensor::FromVectorOn(layer_seeds, device, &rt));
    }
    const int64_t n = static_cast<int64_t>(layer_seeds.size());
    FL_ASSIGN_OR_RETURN(DeviceHop hop, SampleHopOnDevice(graph, seeds_dev, n, fanout, layer, options, stream));
    FL_ASSIGN_OR_RETURN(DeviceCompaction compacted,
                        CompactOnDevice(rt, device, seeds_dev, n, hop.indices, hop.num_edges, stream));
    FL_ASSIGN_OR_RETURN(out.subgraph.indptr, CopyToHost<int64_t>(hop.indptr));
    FL_ASSIGN_OR_RETURN(out.subgraph.original_edge_ids, CopyToHost<int64_t>(hop.edges));
    FL_ASSIGN_OR_RETURN(out.subgraph.indices, CopyToHost<int64_t>(hop.indices));
    FL_ASSIGN_OR_RETURN(out.unique_nodes, CopyToHost<int64_t>(compacted.unique_nodes));
    FL_ASSIGN_OR_RETURN(out.compacted_indices, CopyToHost<int64_t>(compacted.compacted));
    seeds_dev = std::move(compacted.unique_nodes);
    return &out.unique_nodes;
  }));
  return layers;
}

}  // namespace faultline
