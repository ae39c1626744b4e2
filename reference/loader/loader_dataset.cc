// Implements the loader's dataset work (loader_dataset.h).
#include "reference/loader/loader_dataset.h"

#include <unistd.h>

#include <cstring>

#include "reference/features/feature_store.h"
#include "reference/graph/npy.h"
#include "reference/loader/dispatch.h"
#include "reference/loader/item_sampler.h"

namespace faultline {

Result<std::shared_ptr<LoaderDataset>> LoadLoaderDataset(const std::string& dir) {
  auto dataset = std::make_shared<LoaderDataset>();
  FL_ASSIGN_OR_RETURN(dataset->graph, CscGraph::Load(dir));
  const std::string features_path = dir + "/features.npy";
  if (access(features_path.c_str(), F_OK) == 0) {
    FL_ASSIGN_OR_RETURN(npy::NpyArray array, npy::ReadNpy(features_path));
    if (array.dtype != npy::DType::kFloat32 || array.shape.size() != 2 ||
        array.shape[0] != dataset->graph->num_nodes()) {
      return InvalidArgumentError(features_path + ": expected a float32 array of shape (" +
                                  std::to_string(dataset->graph->num_nodes()) + ", dim)");
    }
    dataset->feature_dim = array.shape[1];
    dataset->features.resize(array.num_elements());
    std::memcpy(dataset->features.data(), array.bytes.data(), array.bytes.size());
  }
  return dataset;
}

Status PlaceOnDevice(LoaderDataset& data, const LoaderOptions& o) {
  if (!IsDeviceSamplingMode(o.mode)) return OkStatus();
  DeviceRuntime& rt = GetRuntime(o.runtime);
  const bool pinned = o.mode == LoaderMode::kPinnedCuda;
  FL_ASSIGN_OR_RETURN(
      data.device_graph,
      DeviceGraph::Create(*data.graph, rt, pinned ? GraphPlacement::kPinnedHost : GraphPlacement::kDevice, o.device));
  data.device_buffers = std::make_unique<LoaderDataset::DeviceBuffers>();
  if (data.feature_dim > 0) {
    FL_ASSIGN_OR_RETURN(Tensor host, Tensor::FromVector(data.features, {data.graph->num_nodes(), data.feature_dim}));
    if (pinned) {
      FL_RETURN_IF_ERROR(host.Pin(rt));
      data.device_features = host;
    } else {
      FL_ASSIGN_OR_RETURN(data.device_features, host.To(Device::Cuda(o.device), &rt));
    }
  }
  return OkStatus();
}

namespace {

SamplingOptions MiniBatchSampling(const LoaderOptions& o, int64_t index) {
  return SamplingOptions{o.replace, o.weighted, LoaderRngSeed(o.seed, index), o.sampler_threads};
}

// Whether this process samples its minibatches of `data` on the device:
// DecideDeviceDispatch (by o.dispatch) applied to where `data`'s graph lies.
Result<bool> DispatchesMiniBatchesToDevice(const LoaderDataset& data, const LoaderOptions& o) {
  GraphResidence residence{data.graph->indptr().data(), false, false};
  if (data.device_graph) {
    residence = {data.device_graph->indptr().raw_data(), data.device_graph->placement() == GraphPlacement::kDevice,
                 data.device_graph->indptr().is_pinned()};
  }
  // DGL's on_gpu(seeds), which the mode decides here: the device modes
  // sample from seeds on the device, the others from seeds on the host.
  const bool seeds_on_device = IsDeviceSamplingMode(o.mode);
  return DecideDeviceDispatch(o.dispatch, GetRuntime(o.runtime), seeds_on_device, residence);
}

// Copies the feature rows of `nodes` to out[0, nodes.size() * feature_dim).
void GatherFeatureRows(const LoaderDataset& data, const std::vector<int64_t>& nodes, float* out) {
  if (data.feature_dim == 0) return;  // no features: nothing to copy (and no rows to copy from)
  const size_t row_bytes = static_cast<size_t>(data.feature_dim) * sizeof(float);
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::memcpy(out + i * data.feature_dim, &data.features[nodes[i] * data.feature_dim], row_bytes);
  }
}

// Queues the copy of the float32 `features` on the device into `pinned`
// (grown by a quarter more when too small), in the default stream.
Status QueueCopyToPinned(const Tensor& features, Tensor& pinned) {
  const int64_t values = features.numel();
  if (values == 0) return OkStatus();
  DeviceRuntime& rt = *features.runtime();
  if (pinned.numel() < values) {
    pinned = Tensor();  // unpinned and freed first
    FL_ASSIGN_OR_RETURN(Tensor grown, Tensor::Empty(DType::kFloat32, {values + values / 4}));
    FL_RETURN_IF_ERROR(grown.Pin(rt));
    pinned = std::move(grown);
  }
  return rt.MemcpyAsync(pinned.raw_data(), features.raw_data(), static_cast<size_t>(values) * sizeof(float),
                        MemcpyKind::kDeviceToHost, /*stream=*/nullptr);
}

// Produces `batch`'s layers and features on the device: the layers sampled
// and kept there, the features gathered there from the last layer's unique
// nodes into a tensor of the minibatch's own (which its consumer keeps),
// queued with their id check and queued back to pinned memory, then one
// wait reads back the layers, the features and the check's verdict.
Status ProduceOnDevice(const LoaderDataset& data, const LoaderOptions& o, const SamplingOptions& sampling,
                       MiniBatch& batch, std::string* step) {
  LoaderDataset::DeviceBuffers& buffers = *data.device_buffers;
  // The features' copy and the read of the layers go to the same device's
  // default stream, so that the read's wait covers the copy.
  DeviceGuard guard(data.device_graph->runtime(), data.device_graph->device());
  FL_RETURN_IF_ERROR(guard.status());
  FL_ASSIGN_OR_RETURN(const std::vector<DeviceSampledLayer> kept,
                      SampleMultiLayerKeptOnDevice(*data.device_graph, batch.seeds, o.fanouts, sampling,
                                                   /*stream=*/nullptr, buffers.sampling));
  const Tensor& nodes = kept.back().unique_nodes;
  const int64_t values = nodes.numel() * data.feature_dim;
  if (data.feature_dim > 0) {
    *step = "fetch_features";
    FL_ASSIGN_OR_RETURN(batch.features_on_device, Tensor::Empty(DType::kFloat32, {nodes.numel(), data.feature_dim},
                                                                nodes.device(), nodes.runtime()));
    FL_RETURN_IF_ERROR(QueueIndexSelectInto(data.device_features, nodes, batch.features_on_device, buffers.gather));
    const Status queued = QueueCopyToPinned(batch.features_on_device, buffers.pinned_features);
    if (!queued.ok()) {
      (void)buffers.gather.Verdict();  // frees the scratch for the next minibatch
      return queued;
    }
  }
  *step = "sample_neighbors";  // reading the layers back; its wait also lands the features and their verdict
  Result<std::vector<SampledLayer>> read = ReadLayersBack(kept, batch.seeds, /*stream=*/nullptr, buffers.sampling);
  // The verdict is taken even when the read failed: the scratch takes no
  // other gather until it is.
  const Status verdict = data.feature_dim > 0 ? buffers.gather.Verdict() : OkStatus();
  FL_RETURN_IF_ERROR(read.status());
  batch.layers = std::move(read).value();
  if (!verdict.ok()) {
    *step = "fetch_features";
    return verdict;
  }
  const auto* landed = static_cast<const float*>(buffers.pinned_features.raw_data());
  if (values > 0) batch.features.assign(landed, landed + values);
  return OkStatus();
}

}  // namespace

Result<MiniBatch> ProduceMiniBatch(const LoaderDataset& data, const LoaderOptions& o, int64_t index,
                                   const std::vector<int64_t>& seeds, std::string* step) {
  MiniBatch batch;
  batch.index = index;
  batch.seeds = seeds;
  batch.feature_dim = data.feature_dim;
  const SamplingOptions sampling = MiniBatchSampling(o, index);
  *step = "sample_neighbors";
  FL_ASSIGN_OR_RETURN(bool on_device, DispatchesMiniBatchesToDevice(data, o));
  if (on_device) {
    FL_RETURN_IF_ERROR(ProduceOnDevice(data, o, sampling, batch, step));
    return batch;
  }
  FL_ASSIGN_OR_RETURN(batch.layers, SampleMultiLayer(*data.graph, seeds, o.fanouts, sampling));
  *step = "fetch_features";
  if (data.feature_dim == 0) return batch;
  const std::vector<int64_t>& nodes = batch.layers.back().unique_nodes;
  batch.features.resize(nodes.size() * data.feature_dim);
  GatherFeatureRows(data, nodes, batch.features.data());
  return batch;
}

Status ProduceMiniBatchInto(const LoaderDataset& data, const LoaderOptions& o, int64_t index,
                            const std::vector<int64_t>& seeds, std::string* step, SegmentWriter& segment,
                            const std::function<void()>& halfway, const std::function<void()>& before_each_chunk) {
  *step = "sample_neighbors";
  FL_ASSIGN_OR_RETURN(bool on_device, DispatchesMiniBatchesToDevice(data, o));
  if (on_device) {  // built first: only the pin-handling repros sample on a device in a worker
    FL_ASSIGN_OR_RETURN(MiniBatch batch, ProduceMiniBatch(data, o, index, seeds, step));
    *step = "write_shared_memory";
    return WriteMiniBatch(batch, segment, halfway);
  }
  MiniBatchWriter writer(segment, halfway);
  // A failure while writing names the write, wherever the sampling was.
  auto failed = [&](const Status& status) {
    if (writer.write_failed()) *step = "write_shared_memory";
    return status;
  };
  Status written = writer.Begin(index, seeds, o.fanouts.size());
  SamplingOptions sampling = MiniBatchSampling(o, index);
  sampling.before_each_chunk = before_each_chunk;
  if (written.ok()) written = SampleMultiLayerInto(*data.graph, seeds, o.fanouts, sampling, writer);
  if (!written.ok()) return failed(written);
  *step = "fetch_features";
  const std::vector<int64_t>& nodes = writer.unique_nodes();
  Result<float*> rows = writer.Features(data.feature_dim, nodes.size() * static_cast<size_t>(data.feature_dim));
  if (!rows.ok()) return failed(rows.status());
  GatherFeatureRows(data, nodes, *rows);
  *step = "write_shared_memory";
  return writer.Finish();
}

Result<std::vector<std::vector<int64_t>>> LoaderBatches(const LoaderOptions& o, const LoaderDataset& data) {
  const int64_t num_nodes = data.graph->num_nodes();
  if (o.num_items < -1 || o.num_items > num_nodes) {  // items are node ids, so at most one per node
    return InvalidArgumentError("num_items is " + std::to_string(o.num_items) + "; expected -1 (every node) or 0.." +
                                std::to_string(num_nodes) + " (the graph's nodes)");
  }
  ItemSamplerOptions items{o.num_items < 0 ? num_nodes : o.num_items, o.batch_size, o.shuffle, o.drop_last, o.seed};
  return MakeBatches(items);
}

// Either way the pinned graph it received is restored first (see
// RestorePinnedGraphInWorker).
Result<std::shared_ptr<LoaderDataset>> PrepareWorkerDataset(const LoaderOptions& o,
                                                            std::shared_ptr<LoaderDataset> inherited) {
  std::shared_ptr<LoaderDataset> data = inherited;
  if (data == nullptr) {
    FL_ASSIGN_OR_RETURN(data, LoadLoaderDataset(o.graph_dir));
  }
  if (o.mode == LoaderMode::kPinnedCuda) {
    void* received =
        inherited ? inherited->device_graph->indptr().raw_data() : const_cast<int64_t*>(data->graph->indptr().data());
    FL_RETURN_IF_ERROR(RestorePinnedGraphInWorker(o.pin_handling, GetRuntime(o.runtime), received));
  }
  if (inherited == nullptr) FL_RETURN_IF_ERROR(PlaceOnDevice(*data, o));
  return data;
}

}  // namespace faultline
