// The loader's dataset and the work on it that the main process and the
// workers share: loading it, placing it for the device, preparing a worker's
// copy, and producing one minibatch (sample, then fetch features). Internal
// to //reference/loader (listed in data_loader's srcs).
#ifndef FAULTLINE_REFERENCE_LOADER_LOADER_DATASET_H_
#define FAULTLINE_REFERENCE_LOADER_LOADER_DATASET_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "reference/base/status.h"
#include "reference/features/feature_store.h"
#include "reference/graph/csc_graph.h"
#include "reference/loader/loader_options.h"
#include "reference/loader/minibatch.h"
#include "reference/loader/shared_memory.h"
#include "reference/sampling/device_sampling.h"
#include "reference/tensor/tensor.h"

namespace faultline {

struct LoaderDataset {
  std::optional<CscGraph> graph;  // the host copy; every mode loads it
  int64_t feature_dim = 0;
  std::vector<float> features;
  // pinned-cuda / cuda-cuda: the graph and features where the device reads them.
  std::optional<DeviceGraph> device_graph;
  Tensor device_features;
  // What a device minibatch reuses, kept from minibatch to minibatch by the
  // process that samples, one minibatch at a time: the main process, or
  // (with pin_handling kLegacy, to reproduce F2) each worker its own copy,
  // empty when it starts (the main process does not sample on the device
  // when it has workers).
  struct DeviceBuffers {
    DeviceSamplingWorkspace sampling;
    GatherScratch gather;  // the feature gather's id check words
    // Pinned host memory the features come back through: the copy is
    // queued, and the wait that reads the layers back covers it.
    Tensor pinned_features;
  };
  std::unique_ptr<DeviceBuffers> device_buffers;
};

// Loads the graph and, when the folder has one, features.npy.
Result<std::shared_ptr<LoaderDataset>> LoadLoaderDataset(const std::string& dir);
// Places the graph and features where the device samples from them
// (pinned-cuda: pinned by this process; cuda-cuda: device memory).
Status PlaceOnDevice(LoaderDataset& data, const LoaderOptions& o);
// Returns the minibatches' seeds (the item sampler over the options' items).
Result<std::vector<std::vector<int64_t>>> LoaderBatches(const LoaderOptions& o, const LoaderDataset& data);
// Prepares a worker's dataset: a forked worker received the parent's
// (`inherited`), a spawned one loads its own.
Result<std::shared_ptr<LoaderDataset>> PrepareWorkerDataset(const LoaderOptions& o,
                                                            std::shared_ptr<LoaderDataset> inherited);
// Produces minibatch `index` from `seeds`; the same code runs inline and in
// workers. `step` names the stage that is running, for the error report.
// The device modes use data.device_buffers (the pointer is const, the
// buffers are not): one call at a time per dataset. A device minibatch
// waits for the device once to sample (and once more for each hop larger
// than the workspace's bounded_hop_words), and once to read back the
// layers, the features and their id check's verdict (QueueIndexSelectInto).
Result<MiniBatch> ProduceMiniBatch(const LoaderDataset& data, const LoaderOptions& o, int64_t index,
                                   const std::vector<int64_t>& seeds, std::string* step);
// Produces minibatch `index` as ProduceMiniBatch does, straight into
// `segment` while it is sampled (a worker's path: no MiniBatch is built on
// the CPU path). `halfway` as WriteMiniBatch's; `before_each_chunk` as
// SamplingOptions's (the worker's fault injection).
Status ProduceMiniBatchInto(const LoaderDataset& data, const LoaderOptions& o, int64_t index,
                            const std::vector<int64_t>& seeds, std::string* step, SegmentWriter& segment,
                            const std::function<void()>& halfway, const std::function<void()>& before_each_chunk);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_LOADER_LOADER_DATASET_H_
