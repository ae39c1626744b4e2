// Provides LoaderOptions — what a DataLoader loads, how it samples and where
// it runs — with the names of its modes and its JSON form, which carries the
// options to spawned workers.
#ifndef FAULTLINE_REFERENCE_LOADER_LOADER_OPTIONS_H_
#define FAULTLINE_REFERENCE_LOADER_LOADER_OPTIONS_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "reference/base/status.h"
#include "reference/loader/dispatch.h"
#include "reference/process/process.h"
#include "reference/runtime/runtime.h"

namespace faultline {

// Where sampling runs and where minibatches end up, as GraphBolt names it.
enum class LoaderMode {
  kCpuCpu,      // sample on the host, train on the host
  kCpuCuda,     // sample on the host, copy minibatches to the device
  kPinnedCuda,  // graph and features pinned on the host, sampled by the device (UVA)
  kCudaCuda,    // graph and features in device memory
};

// Returns "cpu-cpu", "cpu-cuda", "pinned-cuda" or "cuda-cuda".
const char* LoaderModeName(LoaderMode mode);
// Parses a mode name; `what` names the option in the error.
Result<LoaderMode> ParseLoaderMode(std::string_view text, std::string_view what = "--mode");
// Returns whether `mode` is one that samples on the device (pinned-cuda,
// cuda-cuda): a property of the mode alone. Whether a given minibatch is
// then sampled there is DecideDeviceDispatch's call (dispatch.h).
bool IsDeviceSamplingMode(LoaderMode mode);

struct LoaderOptions {
  std::string graph_dir;  // indptr.npy, indices.npy [, weights.npy] [, features.npy (2-D float32)]
  std::vector<int64_t> fanouts = {10};
  int64_t batch_size = 64;
  int64_t num_items = -1;  // items are node ids 0..num_items-1; -1 = every node
  bool shuffle = true;
  bool drop_last = false;
  uint64_t seed = 0;  // shuffle and sampling seed
  bool replace = false;
  bool weighted = false;
  int num_workers = 0;
  StartMethod start_method = StartMethod::kFork;
  int sampler_threads = 1;  // threads of the CPU sampler in each process
  LoaderMode mode = LoaderMode::kCpuCpu;
  RuntimeKind runtime = RuntimeKind::kSimCuda;  // the CUDA build (simcuda or cuda)
  int device = 0;
  Behaviour dispatch = Behaviour::kFixed;      // GPU-dispatch decision (F1)
  Behaviour pin_handling = Behaviour::kFixed;  // pinned graphs in workers (F2)
  // As PyTorch's DataLoader `timeout`: a worker that answers nothing for this
  // long while Next() waits for its minibatch is killed and Next() fails
  // naming it. 0 = wait as long as the worker lives.
  std::chrono::milliseconds timeout{0};
  // When set, runs in the parent just before task `batch` is written to
  // worker `worker` (pid `pid`), so that a caller can order its own work
  // against the loader's writes (a test orders a write after a worker's
  // exit, with waitid(WNOWAIT)).
  std::function<void(int worker, pid_t pid, int64_t batch)> on_task_write;
};

// Returns the sampling key of minibatch `index` for loader seed `seed`: each
// minibatch has its own random stream, so no worker assignment matters.
uint64_t LoaderRngSeed(uint64_t seed, int64_t index);

// Returns the options as JSON (every field but `timeout`, `start_method` and
// `on_task_write`, which only the parent uses: a worker knows it was started). Bytes of
// graph_dir that are not UTF-8 become U+FFFD (see CheckOptionsFitJson).
std::string OptionsToJson(const LoaderOptions& options);
// OK when OptionsToJson keeps the options as they are; else an
// InvalidArgument error naming graph_dir (a Linux path need not be UTF-8).
Status CheckOptionsFitJson(const LoaderOptions& options);
// Parses OptionsToJson's output. Anything else — not JSON, a missing field,
// a field of the wrong type, an unknown mode or runtime — is an
// InvalidArgument error naming the field; it never throws.
Result<LoaderOptions> OptionsFromJson(std::string_view json);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_LOADER_LOADER_OPTIONS_H_
