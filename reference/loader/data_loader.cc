// Implements DataLoader. Protocol with a worker: the parent writes batch
// indices (int64) to the worker's task socket; the worker writes each result
// to the shared-memory segment named after the batch and answers on its
// result socket with {batch, message length} followed by the message (empty on
// success, the error text on failure). Batches are dealt round-robin, so
// minibatch i always comes from worker i % num_workers.
//
// When a write to or read from a worker fails (EPIPE, reset, end of file) or
// its process ends, the parent collects what the worker left: every answer
// it sent (read ahead and delivered in order, so its error report wins) and
// its exit status or signal. Next() reports that when it reaches the first
// minibatch the worker did not answer.
#include "reference/loader/data_loader.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
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

namespace {

// One answer of a worker: the minibatch and its error text (empty: success).
struct Answer {
  int64_t batch = 0;
  std::string message;
};

}  // namespace

struct DataLoader::Worker {
  int index = 0;
  std::optional<ChildProcess> process;
  int task_fd = -1;    // parent writes
  int result_fd = -1;  // parent reads
  std::deque<Answer> answers;     // read, not yet delivered
  bool collected = false;         // its connection failed; `exit` and `transport` say how it ended
  std::optional<ChildExit> exit;  // how the process ended, once reaped
  std::string transport;          // the error that revealed the failure
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
  const SamplingOptions sampling{o.replace, o.weighted, LoaderRngSeed(o.seed, index), o.sampler_threads};
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

// Test-only fault injection (docs/reliability.md): the environment variable
// FAULTLINE_LOADER_INJECT = "STEP:ACTION[:WORKER]" makes a worker (every one,
// or only worker WORKER) fail at STEP by ACTION. Production never sets it.
constexpr char kInjectEnv[] = "FAULTLINE_LOADER_INJECT";
constexpr const char* kInjectSteps[] = {"started",     "before_restore", "after_restore", "after_task",
                                        "mid_write",   "after_write",    "after_answer"};
constexpr const char* kInjectActions[] = {"sigkill", "sigsegv", "exit3", "hang"};

struct FaultInjection {
  std::string step;    // empty: nothing injected
  std::string action;
  int worker = -1;     // -1: every worker

  // Fails the calling worker `index` here when `here` is the injected step.
  void At(const char* here, int index) const {
    if (step != here || (worker >= 0 && worker != index)) return;
    if (action == "sigkill") raise(SIGKILL);
    if (action == "exit3") _exit(3);
    if (action == "sigsegv") {
      const rlimit no_core{0, 0};
      setrlimit(RLIMIT_CORE, &no_core);
      signal(SIGSEGV, SIG_DFL);  // past any sanitizer's handler
      raise(SIGSEGV);
    }
    if (action == "hang") {
      for (;;) pause();
    }
  }
};

Result<FaultInjection> FaultInjectionFromEnv() {
  const char* text = std::getenv(kInjectEnv);
  FaultInjection injection;
  if (text == nullptr || *text == '\0') return injection;
  const std::string spec = text;
  auto bad = [&] {
    return InvalidArgumentError(std::string(kInjectEnv) + " is '" + spec +
                                "'; expected STEP:ACTION[:WORKER] with STEP one of started, before_restore, "
                                "after_restore, after_task, mid_write, after_write, after_answer and ACTION one of "
                                "sigkill, sigsegv, exit3, hang");
  };
  const size_t first = spec.find(':');
  if (first == std::string::npos) return bad();
  const size_t second = spec.find(':', first + 1);
  injection.step = spec.substr(0, first);
  injection.action = spec.substr(first + 1, second == std::string::npos ? std::string::npos : second - first - 1);
  if (second != std::string::npos) {
    const std::string worker = spec.substr(second + 1);
    if (worker.empty() || worker.size() > 4 || worker.find_first_not_of("0123456789") != std::string::npos) return bad();
    injection.worker = std::atoi(worker.c_str());
  }
  auto known = [](const std::string& word, const auto& list) {
    for (const char* entry : list) {
      if (word == entry) return true;
    }
    return false;
  };
  if (!known(injection.step, kInjectSteps) || !known(injection.action, kInjectActions)) return bad();
  return injection;
}

// The injection a worker applies (the parent validated the variable first).
FaultInjection InjectionInWorker() {
  Result<FaultInjection> injection = FaultInjectionFromEnv();
  return injection.ok() ? *injection : FaultInjection{};
}

// The worker loop, shared by forked and spawned workers.
int RunWorker(const LoaderOptions& o, std::shared_ptr<DataLoader::Dataset> inherited, const std::string& shm_prefix,
              int index, int task_fd, int result_fd) {
  const FaultInjection inject = InjectionInWorker();
  auto reply = [&](int64_t batch, const std::string& message) {
    int64_t header[2] = {batch, static_cast<int64_t>(message.size())};
    return WriteAll(result_fd, header, sizeof(header)).ok() && WriteAll(result_fd, message.data(), message.size()).ok();
  };
  // A startup failure is reported as the answer to the first task.
  Result<std::vector<std::vector<int64_t>>> batches = InternalError("unset");
  inject.At("before_restore", index);
  Result<std::shared_ptr<DataLoader::Dataset>> data = PrepareWorkerDataset(o, std::move(inherited));
  inject.At("after_restore", index);
  if (data.ok()) batches = Batches(o, **data);
  for (;;) {
    int64_t batch = 0;
    auto got = ReadAll(task_fd, &batch, sizeof(batch));
    if (!got.ok() || !*got || batch == kStopTask) return 0;
    inject.At("after_task", index);
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
      status = WriteSharedMemory(MiniBatchSegmentName(shm_prefix, batch), EncodeMiniBatch(*produced),
                                 [&] { inject.At("mid_write", index); });
      if (status.ok()) inject.At("after_write", index);
    }
    if (!reply(batch, status.ok() ? "" : ErrorToWire(status, step)) || !status.ok()) return status.ok() ? 0 : 1;
    inject.At("after_answer", index);
  }
}

// Spawned entry: args = options JSON, shm prefix, worker index, task fd, result fd.
int SpawnedWorkerMain(const std::vector<std::string>& args) {
  if (args.size() != 5) return 2;
  InjectionInWorker().At("started", std::atoi(args[2].c_str()));
  Result<LoaderOptions> o = OptionsFromJson(nlohmann::json::parse(args[0]));
  if (!o.ok()) return 2;
  return RunWorker(*o, nullptr, args[1], std::stoi(args[2]), std::stoi(args[3]), std::stoi(args[4]));
}
FL_REGISTER_CHILD("faultline_loader_worker", SpawnedWorkerMain);

std::atomic<int> g_loader_serial{0};
TaskWriteHook g_task_write_hook;

}  // namespace

uint64_t LoaderRngSeed(uint64_t seed, int64_t index) {
  // Each minibatch has its own random stream, so no worker assignment matters.
  return seed + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(index + 1);
}

std::string LoaderSegmentPrefix() {
  static const uint64_t nonce = [] {
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32) ^ device();
  }();
  char text[64];
  std::snprintf(text, sizeof(text), "/faultline-%d-%016llx-", static_cast<int>(getpid()),
                static_cast<unsigned long long>(nonce));
  return text;
}

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
  if (options.timeout.count() < 0) {
    return InvalidArgumentError("timeout is " + std::to_string(options.timeout.count()) +
                                " ms; expected >= 0 (0 = no timeout)");
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
  FL_RETURN_IF_ERROR(FaultInjectionFromEnv().status());
  std::unique_ptr<DataLoader> loader(new DataLoader());
  loader->options_ = options;
  FL_ASSIGN_OR_RETURN(loader->dataset_, LoadHostDataset(options.graph_dir));
  FL_RETURN_IF_ERROR(PlaceOnDevice(*loader->dataset_, options));
  FL_ASSIGN_OR_RETURN(loader->batches_, Batches(options, *loader->dataset_));
  loader->shm_prefix_ = LoaderSegmentPrefix() + std::to_string(g_loader_serial++);
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
      InjectionInWorker().At("started", w);
      close(parent_task);
      close(parent_result);
      return RunWorker(o, data, prefix, w, child_task, child_result);
    };
    SpawnOptions spawn;
    spawn.keep_fds = {child_task, child_result};
    auto process = ChildProcess::Start(options_.start_method, body, "faultline_loader_worker",
                                       {OptionsToJson(options_).dump(), shm_prefix_, std::to_string(w),
                                        std::to_string(child_task), std::to_string(child_result)},
                                       spawn);
    close(child_task);
    close(child_result);
    if (!process.ok()) return process.status().WithContext("starting worker " + std::to_string(w));
    worker->process.emplace(std::move(process).value());
    workers_.push_back(std::move(worker));
  }
  // Prefetch: each worker gets a few tasks ahead.
  const int64_t initial = std::min<int64_t>(num_batches(), kPrefetchPerWorker * options_.num_workers);
  for (; next_task_ < initial; ++next_task_) SendTask(*workers_[next_task_ % workers_.size()], next_task_);
  return OkStatus();
}

void SetTaskWriteHookForTesting(TaskWriteHook hook) { g_task_write_hook = std::move(hook); }

void DataLoader::SendTask(Worker& worker, int64_t batch) {
  if (worker.collected) return;  // what it left is reported when Next() reaches it
  if (g_task_write_hook) g_task_write_hook(worker.index, worker.process->pid(), batch);
  Status sent = WriteAll(worker.task_fd, &batch, sizeof(batch));
  if (!sent.ok()) Collect(worker, sent.message());
}

namespace {

constexpr auto kCollectDeadline = std::chrono::seconds(5);
constexpr int64_t kMaxAnswerBytes = int64_t{1} << 24;

// Reads one answer. Returns std::nullopt, with `transport` saying why, when
// the connection closed or broke before a whole answer arrived.
Result<std::optional<Answer>> ReadAnswer(int fd, int worker, std::string* transport) {
  int64_t header[2];
  Result<bool> got = ReadAll(fd, header, sizeof(header));
  if (!got.ok() || !*got) {
    *transport = got.ok() ? "the result connection closed" : got.status().message();
    return std::optional<Answer>();
  }
  if (header[1] < 0 || header[1] > kMaxAnswerBytes) {
    return InternalError("worker " + std::to_string(worker) + " sent a malformed answer for minibatch " +
                         std::to_string(header[0]) + ": message length " + std::to_string(header[1]) +
                         "; expected 0.." + std::to_string(kMaxAnswerBytes));
  }
  Answer answer{header[0], std::string(static_cast<size_t>(header[1]), '\0')};
  Result<bool> complete = ReadAll(fd, answer.message.data(), answer.message.size());
  if (!complete.ok() || !*complete) {
    *transport = complete.ok() ? "the result connection closed mid-answer" : complete.status().message();
    return std::optional<Answer>();
  }
  return std::optional<Answer>(std::move(answer));
}

int MillisecondsUntil(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

// Returns "5 s" or "0.25 s".
std::string Seconds(std::chrono::milliseconds duration) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g s", static_cast<double>(duration.count()) / 1000.0);
  return text;
}

}  // namespace

// Collects what a worker whose connection failed left behind: every answer
// it sent (delivered in order by Receive, so its own error report wins) and
// how its process ended. The worker has closed its end, so it is exiting;
// one that has not ended by kCollectDeadline is killed.
void DataLoader::Collect(Worker& worker, const std::string& transport) {
  if (worker.collected) return;
  worker.collected = true;
  worker.transport = transport;
  const auto deadline = std::chrono::steady_clock::now() + kCollectDeadline;
  for (;;) {
    pollfd pfd{worker.result_fd, POLLIN, 0};
    const int ready = poll(&pfd, 1, MillisecondsUntil(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    std::string ignored;
    Result<std::optional<Answer>> answer = ReadAnswer(worker.result_fd, worker.index, &ignored);
    if (!answer.ok() || !answer->has_value()) break;
    worker.answers.push_back(std::move(**answer));
  }
  if (!worker.exit && worker.process->running()) {
    Result<ChildExit> exit = worker.process->Wait(
        std::chrono::milliseconds(std::max(1, MillisecondsUntil(deadline))));
    if (exit.ok()) worker.exit = *exit;
  }
}

// Delivers the worker's oldest unread answer, which is for minibatch `batch`.
Result<MiniBatch> DataLoader::Accept(Worker& worker, int64_t batch) {
  Answer answer = std::move(worker.answers.front());
  worker.answers.pop_front();
  if (!answer.message.empty()) {
    LoaderFailure where{worker.index, worker.process->pid(), "", answer.batch};
    Status error = ErrorFromWire(answer.message, &where.step);
    failure_ = where;
    return error.WithContext(where.Process() + " failed in " + where.step + " on minibatch " +
                             std::to_string(answer.batch));
  }
  if (answer.batch != batch) {
    return InternalError("worker " + std::to_string(worker.index) + " answered minibatch " +
                         std::to_string(answer.batch) + ", expected " + std::to_string(batch));
  }
  // Decoded straight from the mapping: one copy of the minibatch, not two.
  Result<MiniBatch> decoded = InternalError("unset");
  FL_RETURN_IF_ERROR(ReadSharedMemory(MiniBatchSegmentName(shm_prefix_, batch), [&](std::string_view bytes) {
    decoded = DecodeMiniBatch(bytes);
    return OkStatus();
  }));
  return decoded;
}

// The error for a collected worker that did not answer minibatch `batch`:
// its exit status or signal, or the transport error when it left nothing.
Status DataLoader::WorkerEnded(Worker& worker, int64_t batch) {
  failure_ = LoaderFailure{worker.index, worker.process->pid(), "produce", batch};
  const std::string who = failure_->Process();
  const std::string while_producing = " while producing minibatch " + std::to_string(batch);
  if (!worker.exit) {
    return Status(StatusCode::kChildFailed, who + " left no error report and no exit status" + while_producing +
                                                "; the connection failed: " + worker.transport);
  }
  if (worker.exit->timed_out) {
    return Status(StatusCode::kChildFailed, who + " left no error report" + while_producing + " (" +
                                                worker.transport + ") and did not exit within " +
                                                Seconds(kCollectDeadline) + "; it was killed");
  }
  const std::string how = worker.exit->exited ? "exited with code " + std::to_string(worker.exit->exit_code)
                                              : "was killed by signal " + std::to_string(worker.exit->signal) + " (" +
                                                    strsignal(worker.exit->signal) + ")";
  return Status(StatusCode::kChildFailed, who + " " + how + while_producing);
}

// Kills a worker that answered nothing within the timeout.
Status DataLoader::TimedOut(Worker& worker, int64_t batch) {
  failure_ = LoaderFailure{worker.index, worker.process->pid(), "produce", batch};
  worker.process->Kill(SIGKILL);
  Result<ChildExit> exit = worker.process->Wait(kCollectDeadline);
  worker.collected = true;
  if (exit.ok()) worker.exit = *exit;
  return Status(StatusCode::kChildFailed, failure_->Process() + " produced nothing for " + Seconds(options_.timeout) +
                                              " while producing minibatch " + std::to_string(batch) +
                                              "; it was killed (LoaderOptions::timeout)");
}

Result<MiniBatch> DataLoader::Receive(Worker& worker, int64_t batch) {
  const bool has_timeout = options_.timeout.count() > 0;
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  for (;;) {
    if (!worker.answers.empty()) return Accept(worker, batch);
    if (worker.collected) return WorkerEnded(worker, batch);
    pollfd pfd{worker.result_fd, POLLIN, 0};
    const int ready = poll(&pfd, 1, has_timeout ? std::min(50, MillisecondsUntil(deadline)) : 50);
    if (ready > 0) {
      std::string transport;
      FL_ASSIGN_OR_RETURN(std::optional<Answer> answer, ReadAnswer(worker.result_fd, worker.index, &transport));
      if (answer) {
        worker.answers.push_back(std::move(*answer));
      } else {
        Collect(worker, transport);
      }
      continue;
    }
    FL_ASSIGN_OR_RETURN(ChildExit exit, worker.process->TryWait());
    if (!worker.process->running()) {
      worker.exit = exit;
      Collect(worker, "the process ended");  // reads what it sent before it ended
      continue;
    }
    if (has_timeout && std::chrono::steady_clock::now() >= deadline) return TimedOut(worker, batch);
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
      const int64_t task = next_task_++;
      SendTask(*workers_[task % workers_.size()], task);
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

// Stops the workers (a failed loader kills them: nothing they would produce
// is wanted), reaps them, then unlinks the segments of every task handed
// out and not consumed, including half-written ones.
void DataLoader::Shutdown() {
  for (auto& w : workers_) {
    if (!w->process || !w->process->running()) continue;
    if (failed_) {
      w->process->Kill(SIGKILL);
    } else {
      const int64_t stop = kStopTask;
      (void)WriteAll(w->task_fd, &stop, sizeof(stop));
    }
  }
  for (auto& w : workers_) {
    if (w->process && w->process->running()) (void)w->process->Wait(kCollectDeadline);  // kills past the deadline
  }
  for (int64_t b = next_ > 0 ? next_ - 1 : 0; b < next_task_; ++b) UnlinkSharedMemory(MiniBatchSegmentName(shm_prefix_, b));
  workers_.clear();
}

DataLoader::~DataLoader() { Shutdown(); }

}  // namespace faultline
