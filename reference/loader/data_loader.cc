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

#include "reference/graph/npy.h"
#include "reference/process/child_registry.h"
#include "reference/loader/shared_memory.h"

namespace faultline {

struct DataLoader::Dataset {
  std::optional<CscGraph> graph;
  int64_t feature_dim = 0;
  std::vector<float> features;
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

Result<std::shared_ptr<DataLoader::Dataset>> LoadDataset(const std::string& dir) {
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

// Produces minibatch `index`; the same code runs inline and in workers.
Result<MiniBatch> Produce(const DataLoader::Dataset& data, const LoaderOptions& o, int64_t index,
                          const std::vector<int64_t>& seeds) {
  MiniBatch batch;
  batch.index = index;
  batch.seeds = seeds;
  // Each minibatch has its own random stream, so no worker assignment matters.
  const uint64_t rng_seed = o.seed + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(index + 1);
  FL_ASSIGN_OR_RETURN(batch.layers,
                      SampleMultiLayer(*data.graph, seeds, o.fanouts, o.replace, o.weighted, rng_seed, o.sampler_threads));
  batch.feature_dim = data.feature_dim;
  if (data.feature_dim > 0) {
    const std::vector<int64_t>& nodes = batch.layers.back().unique_nodes;
    batch.features.resize(nodes.size() * data.feature_dim);
    for (size_t i = 0; i < nodes.size(); ++i) {
      std::memcpy(&batch.features[i * data.feature_dim], &data.features[nodes[i] * data.feature_dim],
                  data.feature_dim * sizeof(float));
    }
  }
  return batch;
}

nlohmann::json OptionsToJson(const LoaderOptions& o) {
  return {{"graph_dir", o.graph_dir}, {"fanouts", o.fanouts},     {"batch_size", o.batch_size},
          {"num_items", o.num_items}, {"shuffle", o.shuffle},     {"drop_last", o.drop_last},
          {"seed", o.seed},           {"replace", o.replace},     {"weighted", o.weighted},
          {"sampler_threads", o.sampler_threads}};
}

LoaderOptions OptionsFromJson(const nlohmann::json& j) {
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
  return o;
}

Result<std::vector<std::vector<int64_t>>> Batches(const LoaderOptions& o, const DataLoader::Dataset& data) {
  ItemSamplerOptions items{o.num_items < 0 ? data.graph->num_nodes() : o.num_items, o.batch_size, o.shuffle,
                           o.drop_last, o.seed};
  return MakeBatches(items);
}

// The worker loop, shared by forked and spawned workers.
int RunWorker(const LoaderOptions& o, std::shared_ptr<DataLoader::Dataset> data, const std::string& shm_prefix,
              int task_fd, int result_fd) {
  auto reply = [&](int64_t batch, const std::string& message) {
    int64_t header[2] = {batch, static_cast<int64_t>(message.size())};
    return WriteAll(result_fd, header, sizeof(header)).ok() && WriteAll(result_fd, message.data(), message.size()).ok();
  };
  Result<std::vector<std::vector<int64_t>>> batches = InvalidArgumentError("no dataset");
  if (data == nullptr) {
    auto loaded = LoadDataset(o.graph_dir);
    if (loaded.ok()) data = *loaded;
    else batches = loaded.status();
  }
  if (data != nullptr) batches = Batches(o, *data);
  for (;;) {
    int64_t batch = 0;
    auto got = ReadAll(task_fd, &batch, sizeof(batch));
    if (!got.ok() || !*got || batch == kStopTask) return 0;
    if (!batches.ok()) {
      reply(batch, batches.status().ToString());
      return 1;
    }
    if (batch < 0 || batch >= static_cast<int64_t>(batches->size())) {
      reply(batch, "task for minibatch " + std::to_string(batch) + " is out of range");
      return 1;
    }
    Result<MiniBatch> produced = Produce(*data, o, batch, (*batches)[batch]);
    Status status = produced.ok() ? WriteSharedMemory(MiniBatchSegmentName(shm_prefix, batch),
                                                      EncodeMiniBatch(*produced))
                                  : produced.status();
    if (!reply(batch, status.ok() ? "" : status.ToString()) || !status.ok()) return status.ok() ? 0 : 1;
  }
}

// Spawned entry: args = options JSON, shm prefix, task fd, result fd.
int SpawnedWorkerMain(const std::vector<std::string>& args) {
  if (args.size() != 4) return 2;
  LoaderOptions o = OptionsFromJson(nlohmann::json::parse(args[0]));
  return RunWorker(o, nullptr, args[1], std::stoi(args[2]), std::stoi(args[3]));
}
FL_REGISTER_CHILD("faultline_loader_worker", SpawnedWorkerMain);

std::atomic<int> g_loader_serial{0};

}  // namespace

std::string MiniBatchSegmentName(const std::string& prefix, int64_t batch) {
  return prefix + "-" + std::to_string(batch);
}

Result<std::unique_ptr<DataLoader>> DataLoader::Create(const LoaderOptions& options) {
  if (options.num_workers < 0) {
    return InvalidArgumentError("num_workers is " + std::to_string(options.num_workers) + "; expected >= 0");
  }
  if (options.sampler_threads < 1) {
    return InvalidArgumentError("sampler_threads is " + std::to_string(options.sampler_threads) + "; expected >= 1");
  }
  std::unique_ptr<DataLoader> loader(new DataLoader());
  loader->options_ = options;
  FL_ASSIGN_OR_RETURN(loader->dataset_, LoadDataset(options.graph_dir));
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
  const std::string who =
      "worker " + std::to_string(worker.index) + " (pid " + std::to_string(worker.process->pid()) + ")";
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
        return Status(StatusCode::kChildFailed, "worker " + std::to_string(worker.index) + " (pid " +
                                                    std::to_string(worker.process->pid()) + ") failed on minibatch " +
                                                    std::to_string(batch) + ": " + message);
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
    result = Produce(*dataset_, options_, batch, batches_[batch]);
  } else {
    result = Receive(*workers_[batch % workers_.size()], batch);
    if (result.ok() && next_task_ < num_batches()) {
      Worker& target = *workers_[next_task_ % workers_.size()];
      const int64_t task = next_task_++;
      if (!SendTask(target, task).ok()) result = WorkerFailure(target, task);
    }
  }
  if (!result.ok()) {
    failed_ = true;
    Shutdown();
    return result.status();
  }
  return std::optional<MiniBatch>(std::move(result).value());
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
