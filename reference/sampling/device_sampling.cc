// Implements device sampling as two kernel launches: per-seed pick counts,
// a host prefix sum for the output offsets, then the picks themselves.
#include "reference/sampling/device_sampling.h"

#include "kernels/compact_kernels.cuh"
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

Result<SampledSubgraph> SampleNeighborsOnDevice(const DeviceGraph& graph, const std::vector<int64_t>& seeds,
                                                int64_t fanout, uint32_t layer, const SamplingOptions& options,
                                                StreamHandle stream) {
  const bool replace = options.replace, weighted = options.weighted;
  const uint64_t rng_seed = options.rng_seed;
  FL_RETURN_IF_ERROR(ValidateSampleRequest(graph.num_nodes(), graph.has_weights(), seeds, fanout, weighted));
  SampledSubgraph out;
  out.seeds = seeds;
  out.indptr.assign(seeds.size() + 1, 0);
  if (seeds.empty()) return out;

  DeviceRuntime& rt = graph.runtime();
  const Device device = Device::Cuda(graph.device());
  DeviceGuard guard(rt, graph.device());
  FL_RETURN_IF_ERROR(guard.status());
  const int64_t n = static_cast<int64_t>(seeds.size());

  kernels::sampling::SamplingParams params;
  params.indptr = Data<int64_t>(graph.indptr());
  params.weights = weighted ? Data<float>(graph.weights()) : nullptr;
  params.fanout = fanout;
  params.replace = replace;
  params.weighted = weighted;
  params.rng_seed = rng_seed;
  params.layer = layer;
  const BufferUse indptr_use = graph.indptr().buffer();
  const BufferUse weights_use = weighted ? graph.weights().buffer() : BufferUse{nullptr, 0};

  FL_ASSIGN_OR_RETURN(Tensor seeds_dev, Tensor::FromVectorOn(seeds, device, &rt));
  // n counts and a trailing 0: their exclusive sum is the output's indptr,
  // computed on the device; only its last element (the total) comes back.
  FL_ASSIGN_OR_RETURN(Tensor indptr_dev, Tensor::FromVectorOn(std::vector<int64_t>(n + 1, 0), device, &rt));
  auto* indptr_data = static_cast<int64_t*>(indptr_dev.raw_data());
  const auto launch = kernels::LaunchFor(static_cast<uint64_t>(n), 128, stream);
  kernels::SampleCountKernel count_kernel{params, Data<int64_t>(seeds_dev), n, indptr_data};
  FL_RETURN_IF_ERROR(kernels::LaunchKernel(rt, "SampleCountKernel", launch, count_kernel,
                                           {indptr_use, weights_use, seeds_dev.buffer(),
                                            {indptr_data, indptr_dev.nbytes()}},
                                           &kernels::LaunchSampleCountOnCuda));
  FL_RETURN_IF_ERROR(kernels::ExclusiveSum(rt, indptr_data, indptr_data, n + 1, stream));
  int64_t total = 0;
  FL_RETURN_IF_ERROR(rt.Memcpy(&total, indptr_data + n, sizeof(total), MemcpyKind::kDeviceToHost));
  if (total == 0) return out;

  FL_ASSIGN_OR_RETURN(Tensor edges, Tensor::Empty(DType::kInt64, {total}, device, &rt));
  FL_ASSIGN_OR_RETURN(Tensor indices, Tensor::Empty(DType::kInt64, {total}, device, &rt));
  // One 16-byte SampleKey per output slot, held as two int64 words.
  static_assert(sizeof(kernels::sampling::SampleKey) == 2 * sizeof(int64_t), "SampleKey layout");
  FL_ASSIGN_OR_RETURN(Tensor scratch, Tensor::Empty(DType::kInt64, {2 * total}, device, &rt));
  kernels::SampleSeedsKernel sample_kernel{params,
                                           Data<int64_t>(graph.indices()),
                                           Data<int64_t>(seeds_dev),
                                           n,
                                           Data<int64_t>(indptr_dev),
                                           static_cast<int64_t*>(edges.raw_data()),
                                           static_cast<int64_t*>(indices.raw_data()),
                                           static_cast<kernels::sampling::SampleKey*>(scratch.raw_data())};
  FL_RETURN_IF_ERROR(kernels::LaunchKernel(
      rt, "SampleSeedsKernel", launch, sample_kernel,
      {indptr_use, weights_use, graph.indices().buffer(),
       seeds_dev.buffer(), indptr_dev.buffer(),
       edges.buffer(), indices.buffer(),
       scratch.buffer()},
      &kernels::LaunchSampleSeedsOnCuda));
  FL_ASSIGN_OR_RETURN(out.indptr, CopyToHost<int64_t>(indptr_dev));
  FL_ASSIGN_OR_RETURN(out.original_edge_ids, CopyToHost<int64_t>(edges));
  FL_ASSIGN_OR_RETURN(out.indices, CopyToHost<int64_t>(indices));
  return out;
}

Result<UniqueAndCompactResult> UniqueAndCompactOnDevice(DeviceRuntime& rt, int device_index,
                                                        const std::vector<int64_t>& seeds,
                                                        const std::vector<int64_t>& indices, StreamHandle stream) {
  for (size_t i = 0; i < seeds.size(); ++i) {
    if (seeds[i] < 0) return InvalidArgumentError("seeds[" + std::to_string(i) + "] is negative");
  }
  for (size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] < 0) return InvalidArgumentError("indices[" + std::to_string(i) + "] is negative");
  }
  UniqueAndCompactResult out;
  const int64_t n = static_cast<int64_t>(seeds.size() + indices.size());
  if (n == 0) return out;
  const Device device = Device::Cuda(device_index);
  DeviceGuard guard(rt, device_index);
  FL_RETURN_IF_ERROR(guard.status());

  uint64_t capacity = 1;
  while (capacity < 2 * static_cast<uint64_t>(n)) capacity <<= 1;
  const int64_t cap = static_cast<int64_t>(capacity);
  FL_ASSIGN_OR_RETURN(Tensor seeds_dev, Tensor::FromVectorOn(seeds, device, &rt));
  FL_ASSIGN_OR_RETURN(Tensor indices_dev, Tensor::FromVectorOn(indices, device, &rt));
  // Free slots and "no position yet" are both all-ones words.
  FL_ASSIGN_OR_RETURN(Tensor keys, Tensor::FromVectorOn(std::vector<int64_t>(cap, -1), device, &rt));
  FL_ASSIGN_OR_RETURN(Tensor first, Tensor::FromVectorOn(std::vector<int64_t>(cap, -1), device, &rt));
  FL_ASSIGN_OR_RETURN(Tensor new_id, Tensor::Empty(DType::kInt64, {cap}, device, &rt));
  // n marks and a trailing 0: their exclusive sum ranks the unique nodes.
  FL_ASSIGN_OR_RETURN(Tensor is_first, Tensor::FromVectorOn(std::vector<int64_t>(n + 1, 0), device, &rt));

  const kernels::Positions positions{Data<int64_t>(seeds_dev), static_cast<int64_t>(seeds.size()),
                                     Data<int64_t>(indices_dev), static_cast<int64_t>(indices.size())};
  const kernels::NodeTable table{static_cast<unsigned long long*>(keys.raw_data()),
                                 static_cast<unsigned long long*>(first.raw_data()),
                                 static_cast<int64_t*>(new_id.raw_data()), capacity};
  const BufferUse inputs[] = {seeds_dev.buffer(),
                                       indices_dev.buffer()};
  const BufferUse table_use[] = {keys.buffer(),
                                          first.buffer(),
                                          new_id.buffer()};
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
  FL_ASSIGN_OR_RETURN(Tensor unique_dev, Tensor::Empty(DType::kInt64, {num_unique}, device, &rt));
  FL_RETURN_IF_ERROR(kernels::LaunchKernel(
      rt, "EmitUniqueKernel", launch,
      kernels::EmitUniqueKernel{positions, table, Data<int64_t>(is_first), Data<int64_t>(rank_dev),
                                static_cast<int64_t*>(unique_dev.raw_data())},
      {inputs[0], inputs[1], table_use[0], table_use[1], table_use[2], is_first.buffer(),
       rank_dev.buffer(), unique_dev.buffer()},
      &kernels::LaunchEmitUniqueOnCuda));
  FL_ASSIGN_OR_RETURN(out.unique_nodes, CopyToHost<int64_t>(unique_dev));
  if (indices.empty()) return out;
  FL_ASSIGN_OR_RETURN(Tensor compacted, Tensor::Empty(DType::kInt64, {static_cast<int64_t>(indices.size())}, device, &rt));
  FL_RETURN_IF_ERROR(kernels::LaunchKernel(
      rt, "RelabelKernel", kernels::LaunchFor(indices.size(), 256, stream),
      kernels::RelabelKernel{table, Data<int64_t>(indices_dev), static_cast<int64_t>(indices.size()),
                             static_cast<int64_t*>(compacted.raw_data())},
      {inputs[1], table_use[0], table_use[2], compacted.buffer()},
      &kernels::LaunchRelabelOnCuda));
  FL_ASSIGN_OR_RETURN(out.compacted_indices, CopyToHost<int64_t>(compacted));
  return out;
}

Result<std::vector<SampledLayer>> SampleMultiLayerOnDevice(const DeviceGraph& graph,
                                                           const std::vector<int64_t>& seeds,
                                                           const std::vector<int64_t>& fanouts,
                                                           const SamplingOptions& options, StreamHandle stream) {
  return SampleLayers(
      seeds, fanouts,
      [&](const std::vector<int64_t>& layer_seeds, int64_t fanout, uint32_t layer) {
        return SampleNeighborsOnDevice(graph, layer_seeds, fanout, layer, options, stream);
      },
      [&](const std::vector<int64_t>& layer_seeds, const std::vector<int64_t>& indices) {
        return UniqueAndCompactOnDevice(graph.runtime(), graph.device(), layer_seeds, indices, stream);
      });
}

}  // namespace faultline
