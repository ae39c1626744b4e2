// Implements DataLoader, the main process's side: starting workers, dealing
// tasks, receiving answers in order and reporting what failed. The parts it
// uses: loader_options (what to load and how), loader_dataset (loading and
// producing a minibatch, shared with the workers), worker_loop (the worker
// side), wire_protocol (the frames between them: reference/loader/
// wire_protocol.h) and shared_memory. Batches are dealt round-robin, so
// minibatch i always comes from worker i % num_workers.
//
// When a write to or read from a worker fails (EPIPE, reset, end of file) or
// its process ends, the parent collects what the worker left: every answer
// it sent (read ahead and delivered in order, so its error report wins) and
// its exit status or signal. Next() reports that when it reaches the first
// minibatch the worker did not answer.
#include "reference/loader/data_loader.h"

#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <limits>
#include <mutex>
#include <set>

#include "reference/base/unique_fd.h"
#include "reference/loader/fault_injection.h"
#include "reference/loader/loader_dataset.h"
#include "reference/loader/shared_memory.h"
#include "reference/loader/wire_protocol.h"
#include "reference/loader/worker_loop.h"
#include "reference/sampling/sample_neighbors.h"

namespace faultline {
namespace {

// The descriptors the loaders of this process hold for their workers (each
// worker's two sockets and its slots' segments). A forked child inherits
// them all; a forked worker closes those that are not its own, so that it
// does not keep another loader's slots allocated (their names are gone, so
// nothing else could free them) or another worker's sockets open for as long
// as it lives. Every change is made under Hold()'s lock, which is also held
// from listing them to the fork: no other thread opens, registers or closes
// one in between (a number closed and reused would be an unrelated file in
// the child). The forked child never locks.
class LoaderDescriptors {
 public:
  using Lock = std::unique_lock<std::mutex>;
  static Lock Hold() { return Lock(mutex_); }
  // These three need Hold()'s lock.
  static void Add(const Lock&, int fd) { fds_.insert(fd); }
  static void Remove(const Lock&, int fd) { fds_.erase(fd); }
  // The registered descriptors but `own`.
  static std::vector<int> Except(const Lock&, const std::vector<int>& own) {
    std::vector<int> others;
    for (int fd : fds_) {
      if (std::find(own.begin(), own.end(), fd) == own.end()) others.push_back(fd);
    }
    return others;
  }

 private:
  static inline std::mutex mutex_;
  static inline std::set<int> fds_;
};

}  // namespace

struct DataLoader::Worker {
  int index = 0;
  std::optional<ChildProcess> process;
  UniqueFd task_fd;                  // parent writes
  UniqueFd result_fd;                // parent reads
  wire::AnswerReader reader;         // assembles its answers from the result socket
  std::deque<wire::Answer> answers;  // read, not yet delivered
  std::string broken;                // how its answers broke the protocol (nothing after is read)
  bool collected = false;            // its connection failed; `exit` and `transport` say how it ended
  std::optional<ChildExit> exit;     // how the process ended, once reaped
  std::string transport;             // the error that revealed the failure
  // Its segment slots, created (unnamed) before it starts;
  // a view holds the mapping it lies in, which outlives the reader.
  std::unique_ptr<SegmentReader> segments[kPrefetchPerWorker];
  ~Worker() {
    const LoaderDescriptors::Lock lock = LoaderDescriptors::Hold();
    for (auto& segment : segments) {
      if (segment == nullptr) continue;
      LoaderDescriptors::Remove(lock, segment->fd());
      segment.reset();  // closes its descriptor under the lock
    }
    for (UniqueFd* fd : {&task_fd, &result_fd}) {
      if (!fd->valid()) continue;
      LoaderDescriptors::Remove(lock, fd->get());
      fd->reset();  // under the lock, as the segments'
    }
  }
};

// Shared with the views of workers' minibatches, which may be dropped on
// any thread and after the loader's end.
struct DataLoader::Released {
  std::mutex mutex;
  std::vector<bool> batches;  // by minibatch

  void Mark(int64_t batch) {
    std::lock_guard<std::mutex> lock(mutex);
    batches[batch] = true;
  }
  bool Has(int64_t batch) {
    std::lock_guard<std::mutex> lock(mutex);
    return batches[batch];
  }

  // Held by a view of a worker's minibatch: keeps the slot mapped, and
  // marks the minibatch released when the last copy of the view is dropped.
  struct Lease {
    std::shared_ptr<const void> mapping;
    std::shared_ptr<Released> released;
    int64_t batch = 0;
    ~Lease() { released->Mark(batch); }
  };
};

namespace {

// The longest timeout: what poll(2) can wait in one call, about 24.8 days
// (and far from overflowing a steady_clock deadline).
constexpr int64_t kMaxTimeoutMs = std::numeric_limits<int>::max();

std::atomic<int> g_loader_serial{0};

Status CheckTimeout(std::chrono::milliseconds timeout) {
  if (timeout.count() < 0 || timeout.count() > kMaxTimeoutMs) {
    return InvalidArgumentError("timeout is " + std::to_string(timeout.count()) + " ms; expected 0.." +
                                std::to_string(kMaxTimeoutMs) + " (0 = no timeout)");
  }
  return OkStatus();
}

}  // namespace

std::string LoaderSegmentPrefix() { return ProcessSegmentPrefix(); }

int SegmentSlotOf(int64_t batch, int num_workers) {
  return static_cast<int>((batch / num_workers) % kPrefetchPerWorker);
}

std::string WorkerSegmentName(const std::string& prefix, int worker, int slot) {
  return prefix + "-w" + std::to_string(worker) + "-s" + std::to_string(slot);
}

std::string LoaderFailure::Process() const {
  return (worker < 0 ? std::string("main process") : "worker " + std::to_string(worker)) + " (pid " +
         std::to_string(pid) + ")";
}

Result<std::unique_ptr<DataLoader>> DataLoader::Create(const LoaderOptions& options) {
  if (options.num_workers < 0 || options.num_workers > kMaxWorkers) {
    return InvalidArgumentError("num_workers is " + std::to_string(options.num_workers) + "; expected 0.." +
                                std::to_string(kMaxWorkers) + " (0: no worker processes)");
  }
  if (options.sampler_threads < 1 || options.sampler_threads > kMaxSamplingThreads) {
    return InvalidArgumentError("sampler_threads is " + std::to_string(options.sampler_threads) + "; expected 1.." +
                                std::to_string(kMaxSamplingThreads));
  }
  // Checked here, not by the first minibatch's sampling: there a bad
  // fanout was reported as a failure of worker 0.
  if (options.fanouts.empty()) return InvalidArgumentError("fanouts is empty; expected one fanout per layer");
  for (size_t k = 0; k < options.fanouts.size(); ++k) {
    const int64_t fanout = options.fanouts[k];
    if (fanout < -1 || fanout > std::numeric_limits<int32_t>::max()) {
      return InvalidArgumentError("fanouts[" + std::to_string(k) + "] is " + std::to_string(fanout) +
                                  "; expected -1 (all neighbours) or 0.." +
                                  std::to_string(std::numeric_limits<int32_t>::max()));
    }
  }
  FL_RETURN_IF_ERROR(CheckTimeout(options.timeout));
  if (options.mode != LoaderMode::kCpuCpu && options.runtime == RuntimeKind::kCpu) {
    return InvalidArgumentError(std::string("mode is ") + LoaderModeName(options.mode) +
                                " but runtime is cpu; expected simcuda or cuda for a mode that uses a device");
  }
  if (options.pin_handling == Behaviour::kFixed && IsDeviceSamplingMode(options.mode) && options.num_workers > 0) {
    return InvalidArgumentError(
        "num_workers is " + std::to_string(options.num_workers) + " with mode " + LoaderModeName(options.mode) +
        "; expected 0: device sampling cannot run in worker processes (a forked worker cannot use the parent's "
        "CUDA context, and pinned memory can only be unpinned by the process that pinned it). Use num_workers = 0 "
        "with " +
        LoaderModeName(options.mode) +
        ", or mode cpu-cuda to sample in workers and copy minibatches "
        "to the device in the main process");
  }
  if (options.num_workers > 0 && options.start_method == StartMethod::kSpawn) {
    FL_RETURN_IF_ERROR(CheckOptionsFitJson(options));  // what a spawned worker receives
  }
  FL_RETURN_IF_ERROR(FaultInjectionFromEnv().status());
  std::unique_ptr<DataLoader> loader(new DataLoader());
  loader->options_ = options;
  Result<std::shared_ptr<LoaderDataset>> dataset = LoadLoaderDataset(options.graph_dir);
  if (!dataset.ok()) return dataset.status().WithContext("graph_dir");
  loader->dataset_ = std::move(dataset).value();
  if (options.weighted && !loader->dataset_->graph->has_weights()) {
    return InvalidArgumentError("weighted is true but the graph in " + options.graph_dir +
                                " has no edge weights (weights.npy); expected weighted = false for it");
  }
  FL_RETURN_IF_ERROR(PlaceOnDevice(*loader->dataset_, options));
  FL_ASSIGN_OR_RETURN(loader->batches_, LoaderBatches(options, *loader->dataset_));
  loader->shm_prefix_ = LoaderSegmentPrefix() + std::to_string(g_loader_serial++);
  FL_RETURN_IF_ERROR(loader->StartWorkers());
  return loader;
}

namespace {

// The error of a system call that failed while a worker was started.
Status StartError(const std::string& what, int error) {
  return UnavailableError(what + " failed: " + std::strerror(error));
}

// `error`, and when a call ran out of this process's descriptors
// (memfd_create, socketpair, pipe2, ... EMFILE), how many a worker takes
// and what the limit is. (ENFILE, "Too many open files in system", is the
// system's limit, which ulimit does not raise.)
Status WithDescriptorHint(Status error) {
  const std::string& message = error.message();
  if (message.find(std::strerror(EMFILE)) == std::string::npos ||
      message.find(std::strerror(ENFILE)) != std::string::npos) {
    return error;
  }
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  return Status(error.code(), error.message() + " (each worker holds " + std::to_string(kDescriptorsPerWorker) +
                                  " of this process's descriptors; RLIMIT_NOFILE allows " +
                                  std::to_string(limit.rlim_cur) + ": raise it (ulimit -n) or use fewer workers)");
}

}  // namespace

Status DataLoader::StartWorkers() {
  for (int w = 0; w < options_.num_workers; ++w) {
    Status started = StartWorker(w);
    if (!started.ok()) {
      return WithDescriptorHint(started).WithContext("starting worker " + std::to_string(w) + " of " +
                                                     std::to_string(options_.num_workers));
    }
  }
  released_ = std::make_shared<Released>();
  released_->batches.assign(static_cast<size_t>(num_batches()), false);
  SendTasks();  // each worker gets kPrefetchPerWorker tasks ahead
  return OkStatus();
}

Status DataLoader::StartWorker(int w) {
  auto worker = std::make_unique<Worker>();
  worker->index = w;
  // From creating its descriptors to forking it (declared after `worker`:
  // released before ~Worker takes it on an early return).
  LoaderDescriptors::Lock descriptors = LoaderDescriptors::Hold();
  // Its slots' segments, with no name from the start: the worker inherits
  // the descriptors, so nothing is left behind however either ends.
  std::vector<int> slot_fds;
  for (int slot = 0; slot < kPrefetchPerWorker; ++slot) {
    const std::string name = WorkerSegmentName(shm_prefix_, w, slot);
    FL_ASSIGN_OR_RETURN(int fd, CreateUnlinkedSegment(name));
    worker->segments[slot] = std::make_unique<SegmentReader>(name, fd);
    LoaderDescriptors::Add(descriptors, fd);
    slot_fds.push_back(fd);
  }
  int task[2], result[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, task) != 0) return StartError("socketpair", errno);
  UniqueFd parent_task(task[1]), worker_task(task[0]);  // both closed if the second pair fails
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, result) != 0) return StartError("socketpair", errno);
  UniqueFd worker_result(result[1]);
  worker->task_fd = std::move(parent_task);
  worker->result_fd = UniqueFd(result[0]);
  LoaderDescriptors::Add(descriptors, worker->task_fd.get());
  LoaderDescriptors::Add(descriptors, worker->result_fd.get());
  const int child_task = worker_task.get(), child_result = worker_result.get();
  // Every loader descriptor but its slots (this worker's own sockets'
  // parent ends included): what a forked worker closes first.
  const std::vector<int> not_its_own = LoaderDescriptors::Except(descriptors, slot_fds);
  auto body = [=, data = dataset_, o = options_, prefix = shm_prefix_]() {
    InjectionInWorker().At(InjectStep::kStarted, w);
    for (int fd : not_its_own) UniqueFd(fd).reset();  // this child's copies: closed, not owned by anyone here
    return RunWorker(o, data, prefix, slot_fds, w, child_task, child_result);
  };
  SpawnOptions spawn;
  spawn.keep_fds = {child_task, child_result};
  spawn.keep_fds.insert(spawn.keep_fds.end(), slot_fds.begin(), slot_fds.end());
  const std::vector<std::string> args =
      options_.start_method == StartMethod::kSpawn
          ? SpawnedWorkerArgs(options_, shm_prefix_, slot_fds, w, child_task, child_result)
          : std::vector<std::string>();
  auto process = ChildProcess::Start(options_.start_method, body, kSpawnedWorkerEntry, args, spawn);
  // The worker's ends go before the lock: a worker another thread forks
  // for another loader once it is released would inherit them (they are
  // not registered, so it would not close them) and keep this worker's
  // sockets open, hiding its end from the parent.
  worker_task.reset();
  worker_result.reset();
  descriptors.unlock();
  if (!process.ok()) return process.status();
  worker->process.emplace(std::move(process).value());
  workers_.push_back(std::move(worker));
  return OkStatus();
}

// Task t goes to the slot of minibatch t - kPrefetchPerWorker *
// num_workers, free once that one was taken and its view dropped.
void DataLoader::SendTasks() {
  if (workers_.empty()) return;
  const int64_t window = kPrefetchPerWorker * static_cast<int64_t>(workers_.size());
  for (; next_task_ < num_batches(); ++next_task_) {
    const int64_t previous = next_task_ - window;
    if (previous >= 0 && !released_->Has(previous)) break;
    SendTask(*workers_[next_task_ % workers_.size()], next_task_);
  }
}

Status DataLoader::SetTimeout(std::chrono::milliseconds timeout) {
  FL_RETURN_IF_ERROR(CheckTimeout(timeout));
  options_.timeout = timeout;
  return OkStatus();
}

void DataLoader::SendTask(Worker& worker, int64_t batch) {
  if (worker.collected) return;  // what it left is reported when Next() reaches it
  if (options_.on_task_write) options_.on_task_write(worker.index, worker.process->pid(), batch);
  Status sent = wire::WriteAll(worker.task_fd.get(), &batch, sizeof(batch));
  if (!sent.ok()) Collect(worker, sent.message());
}

namespace {

constexpr auto kCollectDeadline = std::chrono::seconds(5);
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
  // Until its connection closes (a descendant may hold it open: then until
  // the deadline) or its answers break the protocol.
  while (worker.broken.empty()) {
    pollfd pfd{worker.result_fd.get(), POLLIN, 0};
    const int ready = poll(&pfd, 1, MillisecondsUntil(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    std::string ignored;
    if (!ReadAnswers(worker, &ignored)) break;
  }
  if (!worker.exit && worker.process->running()) {
    Result<ChildExit> exit = worker.process->Wait(std::chrono::milliseconds(std::max(1, MillisecondsUntil(deadline))));
    if (exit.ok()) worker.exit = *exit;
  }
}

// Reads what the worker's result socket holds now into its answers.
// Returns false once the connection closed (`transport` says how) or an
// answer broke the protocol (kept in `broken`: nothing after it is read).
bool DataLoader::ReadAnswers(Worker& worker, std::string* transport) {
  Result<wire::AnswerReader::Connection> read =
      worker.reader.ReadAvailable(worker.result_fd.get(), &worker.answers, transport);
  if (!read.ok()) worker.broken = read.status().message();
  return read.ok() && *read == wire::AnswerReader::Connection::kOpen;
}

// Delivers the worker's oldest unread answer, which is for minibatch `batch`.
Result<MiniBatchView> DataLoader::Accept(Worker& worker, int64_t batch) {
  wire::Answer answer = std::move(worker.answers.front());
  worker.answers.pop_front();
  if (!answer.message.empty()) {
    LoaderFailure where{worker.index, worker.process->pid(), "", answer.batch};
    Status error = wire::ErrorFromWire(answer.message, &where.step);
    if (where.step.empty()) where.step = "an unnamed step";
    failure_ = where;
    return error.WithContext(where.Process() + " failed in " + where.step + " on minibatch " +
                             std::to_string(answer.batch));
  }
  if (answer.batch != batch) {
    return BrokeProtocol(worker, batch, "it answered minibatch " + std::to_string(answer.batch));
  }
  // Viewed where it lies in the worker's segment, which both keep mapped.
  const int slot = SegmentSlotOf(batch, options_.num_workers);
  Result<MiniBatchView> view = ReadMiniBatch(*worker.segments[slot]);
  if (view.ok() && view->index != batch) {
    view = DataLossError("the segment holds minibatch " + std::to_string(view->index));
  }
  if (!view.ok()) {
    failure_ = LoaderFailure{worker.index, worker.process->pid(), "read_shared_memory", batch};
    return view.status().WithContext("reading minibatch " + std::to_string(batch) + " from " + failure_->Process() +
                                     "'s segment slot " + std::to_string(slot));
  }
  // Built in place (a moved-from Lease would mark on destruction).
  view->holds = std::shared_ptr<Released::Lease>(new Released::Lease{std::move(view->holds), released_, batch});
  return view;
}

// The error for a worker whose answer to minibatch `batch` broke the
// protocol (`what`): nothing after it on its connection can be trusted.
Status DataLoader::BrokeProtocol(Worker& worker, int64_t batch, const std::string& what) {
  failure_ = LoaderFailure{worker.index, worker.process->pid(), "answer", batch};
  return Status(StatusCode::kChildFailed, failure_->Process() +
                                              " broke the loader's protocol while producing minibatch " +
                                              std::to_string(batch) + ": " + what);
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
  if (worker.exit->timed_out()) {
    return Status(StatusCode::kChildFailed, who + " left no error report" + while_producing + " (" + worker.transport +
                                                ") and did not exit within " + Seconds(kCollectDeadline) +
                                                "; it was killed");
  }
  std::string how = worker.exit->How();
  const std::string partial = worker.reader.Partial();
  if (!partial.empty()) how += " after it had sent " + partial;
  // The kernel (SIGCHLD set to SIG_IGN) or another waiter took its exit
  // status: that it ended is all there is to say.
  const std::string unknown = worker.exit->end == ChildEnd::kReapedElsewhere
                                  ? "; its exit status was reaped elsewhere (waitpid: ECHILD; is SIGCHLD ignored, "
                                    "or does another thread wait for all children?)"
                                  : "";
  // What it printed for its parent before it could answer (a spawned
  // worker that could not start says why there).
  std::string said = worker.exit->transcript;
  while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
  return Status(StatusCode::kChildFailed,
                who + " " + how + while_producing + unknown + (said.empty() ? "" : ": " + said));
}

// Kills a worker that did not answer within the timeout: it sent nothing,
// or part of an answer and then nothing more, or was still sending it.
Status DataLoader::TimedOut(Worker& worker, int64_t batch, bool still_sending) {
  const std::string partial = worker.reader.Partial();
  failure_ = LoaderFailure{worker.index, worker.process->pid(), partial.empty() ? "produce" : "answer", batch};
  worker.process->Kill(SIGKILL);
  Result<ChildExit> exit = worker.process->Wait(kCollectDeadline);
  worker.collected = true;
  if (exit.ok()) worker.exit = *exit;
  const std::string what = partial.empty() ? " produced nothing for " + Seconds(options_.timeout)
                           : still_sending
                               ? " sent " + partial + " and was still sending after " + Seconds(options_.timeout)
                               : " sent " + partial + " and nothing more for " + Seconds(options_.timeout);
  return Status(StatusCode::kChildFailed, failure_->Process() + what + " while producing minibatch " +
                                              std::to_string(batch) + "; it was killed (LoaderOptions::timeout)");
}

Result<MiniBatchView> DataLoader::Receive(Worker& worker, int64_t batch) {
  const bool has_timeout = options_.timeout.count() > 0;
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  // The bytes of a partial answer when this wait first saw some: more than
  // that at the deadline means the worker was still sending.
  size_t first_partial = worker.reader.PartialBytes();
  for (;;) {
    // In the order the worker sent them: its answers, then what broke.
    if (!worker.answers.empty()) return Accept(worker, batch);
    if (!worker.broken.empty()) return BrokeProtocol(worker, batch, worker.broken);
    if (worker.collected) return WorkerEnded(worker, batch);
    pollfd pfd{worker.result_fd.get(), POLLIN, 0};
    const int ready = poll(&pfd, 1, has_timeout ? std::min(50, MillisecondsUntil(deadline)) : 50);
    if (ready > 0) {
      std::string transport;
      if (!ReadAnswers(worker, &transport) && worker.broken.empty()) Collect(worker, transport);
      if (first_partial == 0) first_partial = worker.reader.PartialBytes();
      if (!worker.answers.empty() || !worker.broken.empty() || worker.collected) continue;  // delivered above
    }
    // Checked on every pass, also one that read bytes: a worker that sends
    // its answer a byte at a time, each within poll's 50 ms, must still
    // meet the deadline (and its end must still be seen).
    Result<ChildExit> exit = worker.process->TryWait();
    if (!exit.ok()) {
      failure_ = LoaderFailure{worker.index, worker.process->pid(), "produce", batch};
      return exit.status().WithContext(failure_->Process() + " while producing minibatch " + std::to_string(batch));
    }
    if (!worker.process->running()) {
      worker.exit = *exit;
      Collect(worker, "the process ended");  // reads what it sent before it ended
      continue;
    }
    if (has_timeout && std::chrono::steady_clock::now() >= deadline) {
      return TimedOut(worker, batch, worker.reader.PartialBytes() > first_partial);
    }
  }
}

Result<std::optional<MiniBatch>> DataLoader::Next() {
  if (workers_.empty()) {
    if (failed_) return FailedPreconditionError("the data loader already failed; create a new one");
    if (next_ >= num_batches()) return std::optional<MiniBatch>();
    FL_ASSIGN_OR_RETURN(MiniBatch batch, Build(next_++));
    return std::optional<MiniBatch>(std::move(batch));
  }
  FL_ASSIGN_OR_RETURN(std::optional<MiniBatchView> view, NextView());
  if (!view) return std::optional<MiniBatch>();
  MiniBatch batch = view->ToMiniBatch();
  view.reset();  // frees its slot for the task sent next
  SendTasks();
  return std::optional<MiniBatch>(std::move(batch));
}

Result<std::optional<MiniBatchView>> DataLoader::NextView() {
  if (failed_) return FailedPreconditionError("the data loader already failed; create a new one");
  if (next_ >= num_batches()) return std::optional<MiniBatchView>();
  const int64_t batch = next_;
  if (workers_.empty()) {
    FL_ASSIGN_OR_RETURN(MiniBatch built, Build(next_++));
    return std::optional<MiniBatchView>(MiniBatchView::Of(std::make_shared<const MiniBatch>(std::move(built))));
  }
  SendTasks();
  if (batch >= next_task_) {  // its slot is held
    const int64_t holder = batch - kPrefetchPerWorker * static_cast<int64_t>(workers_.size());
    return FailedPreconditionError("minibatch " + std::to_string(batch) + " is due in worker " +
                                   std::to_string(batch % workers_.size()) + "'s segment slot " +
                                   std::to_string(SegmentSlotOf(batch, options_.num_workers)) +
                                   ", which the view of minibatch " + std::to_string(holder) +
                                   " still holds; drop that view first (a slot is reused every " +
                                   std::to_string(kPrefetchPerWorker) + " x num_workers minibatches)");
  }
  ++next_;
  Result<MiniBatchView> view = Receive(*workers_[batch % workers_.size()], batch);
  if (!view.ok()) return Fail(view.status());
  if (options_.mode == LoaderMode::kCpuCuda) {
    FL_RETURN_IF_ERROR(CopyToDevice(view->features, view->feature_dim, batch, &view->features_on_device));
  }
  return std::optional<MiniBatchView>(std::move(view).value());
}

Result<MiniBatch> DataLoader::Build(int64_t batch) {
  std::string step;
  Result<MiniBatch> built = ProduceMiniBatch(*dataset_, options_, batch, batches_[batch], &step);
  if (!built.ok()) {
    failure_ = LoaderFailure{-1, getpid(), step, batch};
    return Fail(built.status());
  }
  if (options_.mode == LoaderMode::kCpuCuda) {
    FL_RETURN_IF_ERROR(CopyToDevice(ArrayView<float>(built->features.data(), built->features.size()),
                                    built->feature_dim, batch, &built->features_on_device));
  }
  return built;
}

Status DataLoader::CopyToDevice(ArrayView<float> features, int64_t feature_dim, int64_t batch, Tensor* on_device) {
  if (feature_dim == 0) return OkStatus();
  Result<Tensor> host =
      Tensor::FromVector(features.ToVector(), {static_cast<int64_t>(features.size()) / feature_dim, feature_dim});
  Result<Tensor> copied = host.ok() ? host->To(Device::Cuda(options_.device), &GetRuntime(options_.runtime)) : host;
  if (!copied.ok()) {
    failure_ = LoaderFailure{-1, getpid(), "copy_to_device", batch};
    return Fail(copied.status());
  }
  *on_device = std::move(copied).value();
  return OkStatus();
}

Status DataLoader::Fail(Status error) {
  failed_ = true;
  Shutdown();
  return error;
}

std::vector<pid_t> DataLoader::worker_pids() const {
  std::vector<pid_t> pids;
  for (const auto& w : workers_) pids.push_back(w->process->pid());
  return pids;
}

// Stops the workers (a failed loader kills them: nothing they would produce
// is wanted) and reaps them. The segments have no names to unlink; each
// goes with its last descriptor and mapping (a held view keeps its own).
void DataLoader::Shutdown() {
  for (auto& w : workers_) {
    if (!w->process || !w->process->running()) continue;
    if (failed_) {
      w->process->Kill(SIGKILL);
    } else {
      const int64_t stop = kStopTask;
      (void)wire::WriteAll(w->task_fd.get(), &stop, sizeof(stop));
    }
  }
  // One deadline for all of them (each is killed past it): n hung workers
  // cost kCollectDeadline, not n times it.
  const auto deadline = std::chrono::steady_clock::now() + kCollectDeadline;
  for (auto& w : workers_) {
    if (w->process && w->process->running()) {
      (void)w->process->Wait(std::chrono::milliseconds(MillisecondsUntil(deadline)));
    }
  }
  workers_.clear();  // and with them the parent's descriptors and mappings
}

DataLoader::~DataLoader() { Shutdown(); }

}  // namespace faultline