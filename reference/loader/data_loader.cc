// Implements DataLoader. Protocol with a worker: the parent writes batch
// indices (int64) to the worker's task socket; the worker writes each result
// to the shared-memory segment named after the batch and answers on its
// result socket with {batch, message length} followed by the message (empty on
// success, the error text on failure). Batches are dealt round-robin, so
// minibatch i always comes from worker i % num_workers.
#include "reference/loader/data_loader.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "reference/base/status_json.h"
#include "reference/features/feature_store.h"
#include "reference/graph/npy.h"
#include "reference/process/child_registry.h"
#include "reference/loader/shared_memory.h"
#include "reference/sampling/device_sampling.h"

namespace faultline {

struct DataLoader::Dataset {
  std::optional<CscGraph> graph;  // the host copy; every mode loads it
  int64_t feature_dim = 0;
  std::vector<float> features;
  // pinned-cuda / cuda-cuda: the graph and features where the device reads them.
  std::optional<DeviceGraph> device_graph;
  Tensor device_features;
};

struct DataLoader::Worker {
  int index = 0;
  std::optional<ChildProcess> process;
  int task_fd = -1;    // parent writes
  int result_fd = -1;  // parent reads
  ~Worker() {
    if (task_fd >= 0) close(task_fd);
    if (result_fd >= 0) close(result_fd);
  }
};

namespace {

constexpr int kPrefetchPerWorker = 2;
constexpr int64_t kStopTask = -1;

Status WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    // A socket, so a dead peer is an EPIPE error rather than a SIGPIPE.
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return UnavailableError(std::string("pipe write failed: ") + std::strerror(errno));
    p += w;
    n -= static_cast<size_t>(w);
  }
  return OkStatus();
}

// Reads exactly n bytes; returns false at end of file.
Result<bool> ReadAll(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  size_t done = 0;
  while (done < n) {
    ssize_t r = read(fd, p + done, n - done);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return UnavailableError(std::string("pipe read failed: ") + std::strerror(errno));
    if (r == 0) return false;
    done += static_cast<size_t>(r);
  }
  return true;
}

// A worker's error on the wire: the status with its CUDA detail, and the step.
std::string ErrorToWire(const Status& status, const std::string& step) {
  nlohmann::json j = StatusToJson(status);
  j["step"] = step;
  return j.dump();
}

Status ErrorFromWire(const std::string& wire, std::string* step) {
  nlohmann::json j = nlohmann::json::parse(wire, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InternalError("unreadable worker error: " + wire);
  *step = j.value("step", "");
  return StatusFromJson(j);
}

Result<std::shared_ptr<DataLoader::Dataset>> LoadHostDataset(const std::string& dir) {
  auto dataset = std::make_shared<DataLoader::Dataset>();
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

// Places the graph and features where the device samples from them
// (pinned-cuda: pinned by this process; cuda-cuda: device memory).
Status PlaceOnDevice(DataLoader::Dataset& data, const LoaderOptions& o) {
  if (!SamplesOnDevice(o.mode)) return OkStatus();
  DeviceRuntime& rt = GetRuntime(o.runtime);
  const bool pinned = o.mode == LoaderMode::kPinnedCuda;
  FL_ASSIGN_OR_RETURN(data.device_graph, DeviceGraph::Create(*data.graph, rt,
                                                             pinned ? GraphPlacement::kPinnedHost : GraphPlacement::kDevice,
                                                             o.device));
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

// Produces minibatch `index`; the same code runs inline and in workers.
// `step` names the stage that is running, for the error report.
Result<MiniBatch> Produce(const DataLoader::Dataset& data, const LoaderOptions& o, int64_t index,
                          const std::vector<int64_t>& seeds, std::string* step) {
  MiniBatch batch;
  batch.index = index;
  batch.seeds = seeds;
  // Each minibatch has its own random stream, so no worker assignment matters.
  const uint64_t rng_seed = o.seed + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(index + 1);
  const SamplingOptions sampling{o.replace, o.weighted, rng_seed, o.sampler_threads};
  *step = "sample_neighbors";
  GraphResidence residence{data.graph->indptr().data(), false, false};
  if (data.device_graph) {
    residence = {data.device_graph->indptr().raw_data(), data.device_graph->placement() == GraphPlacement::kDevice,
                 data.device_graph->indptr().is_pinned()};
  }
  FL_ASSIGN_OR_RETURN(bool on_device,
                      SampleOnDevice(o.dispatch, GetRuntime(o.runtime), SamplesOnDevice(o.mode), residence));
  if (on_device) {
    FL_ASSIGN_OR_RETURN(batch.layers, SampleMultiLayerOnDevice(*data.device_graph, seeds, o.fanouts, sampling));
  } else {
    FL_ASSIGN_OR_RETURN(batch.layers, SampleMultiLayer(*data.graph, seeds, o.fanouts, sampling));
  }
  *step = "fetch_features";
  batch.feature_dim = data.feature_dim;
  if (data.feature_dim == 0) return batch;
  const std::vector<int64_t>& nodes = batch.layers.back().unique_nodes;
  if (on_device) {
    DeviceRuntime& rt = GetRuntime(o.runtime);
    FL_ASSIGN_OR_RETURN(Tensor ids, Tensor::FromVector(nodes));
    FL_ASSIGN_OR_RETURN(Tensor device_ids, ids.To(Device::Cuda(o.device), &rt));
    FL_ASSIGN_OR_RETURN(batch.features_on_device, IndexSelect(data.device_features, device_ids));
    FL_ASSIGN_OR_RETURN(Tensor host, batch.features_on_device.Cpu());
    FL_ASSIGN_OR_RETURN(batch.features, host.ToVector<float>());
    return batch;
  }
  batch.features.resize(nodes.size() * data.feature_dim);
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::memcpy(&batch.features[i * data.feature_dim], &data.features[nodes[i] * data.feature_dim],
                data.feature_dim * sizeof(float));
  }
  return batch;
}

nlohmann::json OptionsToJson(const LoaderOptions& o) {
  return {{"graph_dir", o.graph_dir},
          {"fanouts", o.fanouts},
          {"batch_size", o.batch_size},
          {"num_items", o.num_items},
          {"shuffle", o.shuffle},
          {"drop_last", o.drop_last},
          {"seed", o.seed},
          {"replace", o.replace},
          {"weighted", o.weighted},
          {"sampler_threads", o.sampler_threads},
          {"mode", LoaderModeName(o.mode)},
          {"runtime", RuntimeKindName(o.runtime)},
          {"device", o.device},
          {"dispatch", BehaviourName(o.dispatch)},
          {"pin_handling", BehaviourName(o.pin_handling)}};
}

Result<LoaderOptions> OptionsFromJson(const nlohmann::json& j) {
  LoaderOptions o;
  o.graph_dir = j.at("graph_dir");
  o.fanouts = j.at("fanouts").get<std::vector<int64_t>>();
  o.batch_size = j.at("batch_size");
  o.num_items = j.at("num_items");
  o.shuffle = j.at("shuffle");
  o.drop_last = j.at("drop_last");
  o.seed = j.at("seed");
  o.replace = j.at("replace");
  o.weighted = j.at("weighted");
  o.sampler_threads = j.at("sampler_threads");
  FL_ASSIGN_OR_RETURN(o.mode, ParseLoaderMode(j.at("mode").get<std::string>()));
  FL_ASSIGN_OR_RETURN(o.runtime, ParseRuntimeKind(j.at("runtime").get<std::string>()));
  o.device = j.at("device");
  FL_ASSIGN_OR_RETURN(o.dispatch, ParseBehaviour(j.at("dispatch").get<std::string>(), "dispatch"));
  FL_ASSIGN_OR_RETURN(o.pin_handling, ParseBehaviour(j.at("pin_handling").get<std::string>(), "pin_handling"));
  return o;
}

Result<std::vector<std::vector<int64_t>>> Batches(const LoaderOptions& o, const DataLoader::Dataset& data) {
  ItemSamplerOptions items{o.num_items < 0 ? data.graph->num_nodes() : o.num_items, o.batch_size, o.shuffle,
                           o.drop_last, o.seed};
  return MakeBatches(items);
}

// Prepares a worker's dataset: a forked worker received the parent's, a
// spawned one loads its own. Either way the pinned graph it received is
// restored first (see RestorePinnedGraphInWorker).
Result<std::shared_ptr<DataLoader::Dataset>> PrepareWorkerDataset(const LoaderOptions& o,
                                                                  std::shared_ptr<DataLoader::Dataset> inherited) {
  std::shared_ptr<DataLoader::Dataset> data = inherited;
  if (data == nullptr) {
    FL_ASSIGN_OR_RETURN(data, LoadHostDataset(o.graph_dir));
  }
  if (o.mode == LoaderMode::kPinnedCuda) {
    void* received = inherited ? inherited->device_graph->indptr().raw_data()
                               : const_cast<int64_t*>(data->graph->indptr().data());
    FL_RETURN_IF_ERROR(RestorePinnedGraphInWorker(o.pin_handling, GetRuntime(o.runtime), received));
  }
  if (inherited == nullptr) FL_RETURN_IF_ERROR(PlaceOnDevice(*data, o));
  return data;
}

// The worker loop, shared by forked and spawned workers.
int RunWorker(const LoaderOptions& o, std::shared_ptr<DataLoader::Dataset> inherited, const std::string& shm_prefix,
              int task_fd, int result_fd) {
  auto reply = [&](int64_t batch, const std::string& message) {
    int64_t header[2] = {batch, static_cast<int64_t>(message.size())};
    return WriteAll(result_fd, header, sizeof(header)).ok() && WriteAll(result_fd, message.data(), message.size()).ok();
  };
  // A startup failure is reported as the answer to the first task.
  Result<std::vector<std::vector<int64_t>>> batches = InternalError("unset");
  Result<std::shared_ptr<DataLoader::Dataset>> data = PrepareWorkerDataset(o, std::move(inherited));
  if (data.ok()) batches = Batches(o, **data);
  for (;;) {
    int64_t batch = 0;
    auto got = ReadAll(task_fd, &batch, sizeof(batch));
    if (!got.ok() || !*got || batch == kStopTask) return 0;
    if (!data.ok()) {
      reply(batch, ErrorToWire(data.status(), "restore_state"));
      return 1;
    }
    if (!batches.ok()) {
      reply(batch, ErrorToWire(batches.status(), "item_sampler"));
      return 1;
    }
    if (batch < 0 || batch >= static_cast<int64_t>(batches->size())) {
      reply(batch, ErrorToWire(InternalError("task for minibatch " + std::to_string(batch) + " is out of range"),
                               "receive_task"));
      return 1;
    }
    std::string step;
    Result<MiniBatch> produced = Produce(**data, o, batch, (*batches)[batch], &step);
    Status status = produced.status();
    if (produced.ok()) {
      step = "write_shared_memory";
      status = WriteSharedMemory(MiniBatchSegmentName(shm_prefix, batch), EncodeMiniBatch(*produced));
    }
    if (!reply(batch, status.ok() ? "" : ErrorToWire(status, step)) || !status.ok()) return status.ok() ? 0 : 1;
  }
}

// Spawned entry: args = options JSON, shm prefix, task fd, result fd.
int SpawnedWorkerMain(const std::vector<std::string>& args) {
  if (args.size() != 4) return 2;
  Result<LoaderOptions> o = OptionsFromJson(nlohmann::json::parse(args[0]));
  if (!o.ok()) return 2;
  return RunWorker(*o, nullptr, args[1], std::stoi(args[2]), std::stoi(args[3]));
}
FL_REGISTER_CHILD("faultline_loader_worker", SpawnedWorkerMain);

std::atomic<int> g_loader_serial{0};

}  // namespace

std::string MiniBatchSegmentName(const std::string& prefix, int64_t batch) {
  return prefix + "-" + std::to_string(batch);
}

const char* LoaderModeName(LoaderMode mode) {
  switch (mode) {
    case LoaderMode::kCpuCpu: return "cpu-cpu";
    case LoaderMode::kCpuCuda: return "cpu-cuda";
    case LoaderMode::kPinnedCuda: return "pinned-cuda";
    case LoaderMode::kCudaCuda: return "cuda-cuda";
  }
  return "unknown";
}

Result<LoaderMode> ParseLoaderMode(std::string_view text, std::string_view what) {
  for (LoaderMode mode : {LoaderMode::kCpuCpu, LoaderMode::kCpuCuda, LoaderMode::kPinnedCuda, LoaderMode::kCudaCuda}) {
    if (text == LoaderModeName(mode)) return mode;
  }
  return InvalidArgumentError(std::string(what) + " is '" + std::string(text) +
                              "'; expected one of cpu-cpu, cpu-cuda, pinned-cuda, cuda-cuda");
}

bool SamplesOnDevice(LoaderMode mode) { return mode == LoaderMode::kPinnedCuda || mode == LoaderMode::kCudaCuda; }

std::string LoaderFailure::Process() const {
  return (worker < 0 ? std::string("main process") : "worker " + std::to_string(worker)) + " (pid " +
         std::to_string(pid) + ")";
}

Result<std::unique_ptr<DataLoader>> DataLoader::Create(const LoaderOptions& options) {
  if (options.num_workers < 0) {
    return InvalidArgumentError("num_workers is " + std::to_string(options.num_workers) + "; expected >= 0");
  }
  if (options.sampler_threads < 1) {
    return InvalidArgumentError("sampler_threads is " + std::to_string(options.sampler_threads) + "; expected >= 1");
  }
  if (options.mode != LoaderMode::kCpuCpu && options.runtime == RuntimeKind::kCpu) {
    return InvalidArgumentError(std::string("mode is ") + LoaderModeName(options.mode) +
                                " but runtime is cpu; expected simcuda or cuda for a mode that uses a device");
  }
  if (options.pin_handling == Behaviour::kFixed && SamplesOnDevice(options.mode) && options.num_workers > 0) {
    return InvalidArgumentError(
        "num_workers is " + std::to_string(options.num_workers) + " with mode " + LoaderModeName(options.mode) +
        "; expected 0: device sampling cannot run in worker processes (a forked worker cannot use the parent's "
        "CUDA context, and pinned memory can only be unpinned by the process that pinned it). Use num_workers = 0 "
        "with " + LoaderModeName(options.mode) + ", or mode cpu-cuda to sample in workers and copy minibatches "
        "to the device in the main process");
  }
  std::unique_ptr<DataLoader> loader(new DataLoader());
  loader->options_ = options;
  FL_ASSIGN_OR_RETURN(loader->dataset_, LoadHostDataset(options.graph_dir));
  FL_RETURN_IF_ERROR(PlaceOnDevice(*loader->dataset_, options));
  FL_ASSIGN_OR_RETURN(loader->batches_, Batches(options, *loader->dataset_));
  loader->shm_prefix_ = "/faultline-" + std::to_string(getpid()) + "-" + std::to_string(g_loader_serial++);
  FL_RETURN_IF_ERROR(loader->StartWorkers());
  return loader;
}

Status DataLoader::StartWorkers() {
  for (int w = 0; w < options_.num_workers; ++w) {
    int task[2], result[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, task) != 0) return InternalError("socketpair failed");
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, result) != 0) {
      close(task[0]);
      close(task[1]);
      return InternalError("socketpair failed");
    }
    auto worker = std::make_unique<Worker>();
    worker->index = w;
    worker->task_fd = task[1];
    worker->result_fd = result[0];
    const int child_task = task[0], child_result = result[1];
    const int parent_task = task[1], parent_result = result[0];
    auto body = [=, data = dataset_, o = options_, prefix = shm_prefix_]() {
      close(parent_task);
      close(parent_result);
      return RunWorker(o, data, prefix, child_task, child_result);
    };
    SpawnOptions spawn;
    spawn.keep_fds = {child_task, child_result};
    auto process = ChildProcess::Start(options_.start_method, body, "faultline_loader_worker",
                                       {OptionsToJson(options_).dump(), shm_prefix_, std::to_string(child_task),
                                        std::to_string(child_result)},
                                       spawn);
    close(child_task);
    close(child_result);
    if (!process.ok()) return process.status().WithContext("starting worker " + std::to_string(w));
    worker->process.emplace(std::move(process).value());
    workers_.push_back(std::move(worker));
  }
  // Prefetch: each worker gets a few tasks ahead.
  const int64_t initial = std::min<int64_t>(num_batches(), kPrefetchPerWorker * options_.num_workers);
  for (; next_task_ < initial; ++next_task_) {
    FL_RETURN_IF_ERROR(SendTask(*workers_[next_task_ % workers_.size()], next_task_));
  }
  return OkStatus();
}

Status DataLoader::SendTask(Worker& worker, int64_t batch) {
  return WriteAll(worker.task_fd, &batch, sizeof(batch));
}

// Returns how a worker that stopped answering failed: waits briefly for it
// to end so the error can name the signal or exit code.
Status DataLoader::WorkerFailure(Worker& worker, int64_t batch) {
  failure_ = LoaderFailure{worker.index, worker.process->pid(), "produce", batch};
  const std::string who = failure_->Process();
  FL_ASSIGN_OR_RETURN(ChildExit exit, worker.process->Wait(std::chrono::seconds(5)));
  std::string how = exit.timed_out ? "stopped answering and was killed"
                    : exit.exited  ? "exited with code " + std::to_string(exit.exit_code)
                                   : "was killed by signal " + std::to_string(exit.signal) + " (" +
                                        strsignal(exit.signal) + ")";
  return Status(StatusCode::kChildFailed, who + " " + how + " while producing minibatch " + std::to_string(batch));
}

Result<MiniBatch> DataLoader::Receive(Worker& worker, int64_t batch) {
  for (;;) {
    pollfd pfd{worker.result_fd, POLLIN, 0};
    if (poll(&pfd, 1, 50) > 0) {
      int64_t header[2];
      auto got = ReadAll(worker.result_fd, header, sizeof(header));
      if (!got.ok() || !*got) return WorkerFailure(worker, batch);  // the socket closed: the worker is gone
      std::string message(static_cast<size_t>(header[1]), '\0');
      auto complete = ReadAll(worker.result_fd, message.data(), message.size());
      if (!complete.ok() || !*complete) return WorkerFailure(worker, batch);
      if (!message.empty()) {
        LoaderFailure where{worker.index, worker.process->pid(), "", batch};
        Status error = ErrorFromWire(message, &where.step);
        failure_ = where;
        return error.WithContext(where.Process() + " failed in " + where.step + " on minibatch " +
                                 std::to_string(batch));
      }
      if (header[0] != batch) {
        return InternalError("worker " + std::to_string(worker.index) + " answered minibatch " +
                             std::to_string(header[0]) + ", expected " + std::to_string(batch));
      }
      FL_ASSIGN_OR_RETURN(std::string bytes, TakeSharedMemory(MiniBatchSegmentName(shm_prefix_, batch)));
      return DecodeMiniBatch(bytes);
    }
    FL_RETURN_IF_ERROR(worker.process->TryWait().status());
    if (!worker.process->running()) return WorkerFailure(worker, batch);
  }
}

Result<std::optional<MiniBatch>> DataLoader::Next() {
  if (failed_) return FailedPreconditionError("the data loader already failed; create a new one");
  if (next_ >= num_batches()) return std::optional<MiniBatch>();
  const int64_t batch = next_++;
  Result<MiniBatch> result = InternalError("unset");
  if (workers_.empty()) {
    std::string step;
    result = Produce(*dataset_, options_, batch, batches_[batch], &step);
    if (!result.ok()) failure_ = LoaderFailure{-1, getpid(), step, batch};
  } else {
    result = Receive(*workers_[batch % workers_.size()], batch);
    if (result.ok() && next_task_ < num_batches()) {
      Worker& target = *workers_[next_task_ % workers_.size()];
      const int64_t task = next_task_++;
      if (!SendTask(target, task).ok()) result = WorkerFailure(target, task);
    }
  }
  if (result.ok() && options_.mode == LoaderMode::kCpuCuda) {
    Status copied = CopyToDevice(*result);
    if (!copied.ok()) {
      failure_ = LoaderFailure{-1, getpid(), "copy_to_device", batch};
      result = copied;
    }
  }
  if (!result.ok()) {
    failed_ = true;
    Shutdown();
    return result.status();
  }
  return std::optional<MiniBatch>(std::move(result).value());
}

// cpu-cuda: the main process moves each sampled minibatch's features to the device.
Status DataLoader::CopyToDevice(MiniBatch& batch) {
  if (batch.feature_dim == 0) return OkStatus();
  FL_ASSIGN_OR_RETURN(Tensor host, Tensor::FromVector(batch.features, {static_cast<int64_t>(batch.features.size()) /
                                                                           batch.feature_dim, batch.feature_dim}));
  FL_ASSIGN_OR_RETURN(batch.features_on_device, host.To(Device::Cuda(options_.device), &GetRuntime(options_.runtime)));
  return OkStatus();
}

std::vector<pid_t> DataLoader::worker_pids() const {
  std::vector<pid_t> pids;
  for (const auto& w : workers_) pids.push_back(w->process->pid());
  return pids;
}

void DataLoader::Shutdown() {
  for (auto& w : workers_) {
    const int64_t stop = kStopTask;
    (void)WriteAll(w->task_fd, &stop, sizeof(stop));
  }
  for (auto& w : workers_) {
    if (w->process && w->process->running()) (void)w->process->Wait(std::chrono::seconds(5));  // kills past the deadline
  }
  // Segments of tasks that were handed out but not consumed.
  for (int64_t b = next_ > 0 ? next_ - 1 : 0; b < next_task_; ++b) UnlinkSharedMemory(MiniBatchSegmentName(shm_prefix_, b));
  workers_.clear();
}

DataLoader::~DataLoader() { Shutdown(); }

}  // namespace faultline
