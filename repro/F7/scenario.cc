// F7 — a killed data-loader worker hangs the trainer (PyTorch PR 3474, the
// worker-death check and timeout, hardened by PR 11985). docs/failures/F7.md.
//
// A worker pool shaped like PyTorch's DataLoader before the fix: one index
// queue per worker, one data queue that every worker writes and the trainer
// reads, minibatches delivered in order. Worker 1 is killed (SIGKILL, as the
// OOM killer does) before it produces minibatch 1. Every process still holds
// the data queue's write end (a multiprocessing.Queue lives in all of them),
// so the trainer's read can never see end-of-file: minibatch 1 never comes.
//   legacy:     data_queue.get() with no liveness check blocks forever; the
//               harness proves it (still blocked past a deadline, worker 1
//               dead), then releases the trainer through the queue;
//   fixed:      PR 3474: the wait also watches the workers (here a pidfd per
//               worker, the poll-able form of the SIGCHLD handler); the dead
//               one ends it with "DataLoader worker (pid N) is killed by
//               signal: Killed." at once;
//   workaround: PR 3474's `timeout`: data_queue.get(timeout=1) ends with
//               "DataLoader timed out after 1 seconds" (it cannot say why).
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "reference/base/fd_io.h"
#include "reference/base/unique_fd.h"
#include "reference/graph/generators.h"
#include "reference/sampling/sample_neighbors.h"
#include "repro/F7/signature.h"
#include "repro/registry.h"
#include "repro/scenario_support.h"

namespace faultline {
namespace repro {

std::string KilledWorkerMessage(pid_t pid, int signal) {
  return "DataLoader worker (pid " + std::to_string(pid) + ") is killed by signal: " + strsignal(signal) + ".";
}

std::string TimedOutMessage(int seconds) {
  return "DataLoader timed out after " + std::to_string(seconds) + " seconds";
}

namespace {

constexpr int kWorkers = 2;
constexpr int kBatches = 4;
constexpr int64_t kBatchSize = 32;
constexpr int kKilledWorker = 1;    // it owns minibatches 1 and 3 (round robin)
constexpr int kTimeoutSeconds = 1;  // the workaround's DataLoader(timeout=1)
constexpr int64_t kStopFrame = -1;  // the harness's release of a proven hang

// What a worker sends for one minibatch: small enough for one atomic pipe
// write (< PIPE_BUF), so frames of different workers never interleave.
struct Frame {
  int64_t batch = 0;
  int64_t edges = 0;
  uint64_t hash = 0;  // FNV-1a of the sampled edge sources
};

// The dataset every process samples from (built before the workers fork).
const Result<CscGraph>& Graph() {
  static const auto* graph = new Result<CscGraph>(GeneratePowerLaw(4000, 40000, /*seed=*/7, /*weighted=*/false));
  return *graph;
}

Result<Frame> SampleBatch(int64_t batch) {
  FL_RETURN_IF_ERROR(Graph().status());
  std::vector<int64_t> seeds(kBatchSize);
  for (int64_t i = 0; i < kBatchSize; ++i) seeds[i] = batch * kBatchSize + i;
  FL_ASSIGN_OR_RETURN(SampledSubgraph sub, SampleNeighbors(*Graph(), seeds, /*fanout=*/10, /*layer=*/0,
                                                           SamplingOptions{false, false, /*rng_seed=*/11, 1}));
  Frame frame{batch, static_cast<int64_t>(sub.indices.size()), 1469598103934665603ull};
  for (int64_t v : sub.indices) frame.hash = (frame.hash ^ static_cast<uint64_t>(v)) * 1099511628211ull;
  return frame;
}

// The pool: its pipes are shared by every process, as a multiprocessing.Queue is.
// Each pipe is {read end, write end}.
struct Pool {
  UniqueFd data[2];
  UniqueFd index[kWorkers][2];
  std::vector<ChildProcess> workers;

  // Kills and reaps any worker still running; the pipes close after.
  ~Pool() { workers.clear(); }
};

// Opens a pipe into `ends`: {read end, write end}.
Status OpenPipe(UniqueFd ends[2]) {
  int fds[2];
  if (pipe(fds) != 0) return UnavailableError(std::string("pipe: ") + strerror(errno));
  ends[0].reset(fds[0]);
  ends[1].reset(fds[1]);
  return OkStatus();
}

// A worker's loop (PyTorch's _worker_loop): take a minibatch index, sample
// it, put the result on the data queue; -1 ends it.
int WorkerLoop(const Pool& pool, int worker) {
  for (;;) {
    int64_t batch = 0;
    if (!ReadAll(pool.index[worker][0].get(), &batch, sizeof(batch)).ok() || batch < 0) return 0;
    Result<Frame> frame = SampleBatch(batch);
    if (!frame.ok()) return 2;
    if (!WriteAll(pool.data[1].get(), &*frame, sizeof(Frame)).ok()) return 3;
  }
}

Status StartPool(Pool& pool) {
  FL_RETURN_IF_ERROR(Graph().status());
  FL_RETURN_IF_ERROR(OpenPipe(pool.data));
  for (auto& ends : pool.index) FL_RETURN_IF_ERROR(OpenPipe(ends));
  for (int w = 0; w < kWorkers; ++w) {
    FL_ASSIGN_OR_RETURN(ChildProcess child, ChildProcess::Fork([&pool, w] { return WorkerLoop(pool, w); }));
    pool.workers.push_back(std::move(child));
  }
  return OkStatus();
}

// Every minibatch index goes out at once (prefetching), round robin.
Status SendTasks(Pool& pool) {
  for (int64_t b = 0; b < kBatches; ++b) {
    if (!WriteAll(pool.index[b % kWorkers][1].get(), &b, sizeof(b)).ok()) {
      return UnavailableError("index queue write failed");
    }
  }
  return OkStatus();
}

// The OOM killer: worker 1 dies by SIGKILL. Waits (without reaping: legacy
// code never looks) until it is dead.
Status KillWorker(Pool& pool, int worker) {
  const pid_t pid = pool.workers[worker].pid();
  if (kill(pid, SIGKILL) != 0) return UnavailableError(std::string("kill: ") + strerror(errno));
  siginfo_t info{};
  while (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) != 0) {
    if (errno != EINTR) return UnavailableError(std::string("waitid: ") + strerror(errno));
  }
  return OkStatus();
}

// Starts the pool, kills worker 1 before it has taken a task, sends the
// tasks and waits until worker 0's first result (minibatch 0) is in the
// queue, so every run starts from the same state: minibatch 0 is there to be
// read, minibatch 1 never will be (it waits in the dead worker's index queue).
Status Prepare(Pool& pool) {
  FL_RETURN_IF_ERROR(StartPool(pool));
  FL_RETURN_IF_ERROR(KillWorker(pool, kKilledWorker));
  FL_RETURN_IF_ERROR(SendTasks(pool));
  pollfd queued{pool.data[0].get(), POLLIN, 0};
  int ready;
  while ((ready = poll(&queued, 1, /*timeout_ms=*/30000)) < 0 && errno == EINTR) {
  }
  if (ready <= 0) return UnavailableError("worker 0 put nothing on the data queue within 30 s");
  return OkStatus();
}

std::string Trainer() { return "main process (pid " + std::to_string(getpid()) + ")"; }

std::string Header(const Pool& pool, const std::string& wait) {
  return "F7: " + std::to_string(kWorkers) + " workers (pids " + std::to_string(pool.workers[0].pid()) + ", " +
         std::to_string(pool.workers[1].pid()) +
         ") share one data queue; worker 1 is killed by SIGKILL (the OOM "
         "killer) before it produces minibatch 1; the trainer waits with " +
         wait + "\n";
}

// The in-order delivery every variant shares: returns the frames up to the
// first one `get` could not deliver, and how `get` failed.
struct Delivery {
  std::map<int64_t, Frame> received;
  int64_t waiting_for = 0;
  std::optional<ObservedError> error;
};

using Get = std::function<std::optional<ObservedError>(Frame*)>;

Delivery Deliver(const Get& get) {
  Delivery d;
  std::map<int64_t, Frame> early;  // out of order, as PyTorch's reorder dict
  for (d.waiting_for = 0; d.waiting_for < kBatches; ++d.waiting_for) {
    while (early.count(d.waiting_for) == 0) {
      Frame frame;
      if (auto error = get(&frame)) {
        d.error = error;
        return d;
      }
      early[frame.batch] = frame;
    }
    d.received[d.waiting_for] = early[d.waiting_for];
  }
  return d;
}

// Minibatch 0 must be what the trainer would sample itself.
std::string CheckFirstBatch(const Delivery& d, bool* equal) {
  Result<Frame> expected = SampleBatch(0);
  auto it = d.received.find(0);
  *equal = expected.ok() && it != d.received.end() && it->second.edges == expected->edges &&
           it->second.hash == expected->hash;
  return std::string("minibatch 0 ") + (*equal ? "equals" : "DIFFERS from") + " the single-process sample\n";
}

Outcome RunLegacy(RuntimeKind, const Signature& signature) {
  Pool pool;
  if (Status s = Prepare(pool); !s.ok()) return Unexpected(Observe(s, Trainer(), "start"), "F7\n");
  std::string transcript = Header(pool, "data_queue.get() and no liveness check (before PR 3474)");
  const pid_t killed = pool.workers[kKilledWorker].pid();

  // The watchdog: if the trainer is still blocked at the deadline, the hang
  // is proven; it writes a stop frame into the queue (the harness holds a
  // write end, as the trainer does) so the trainer returns.
  std::mutex mu;
  std::condition_variable cv;
  bool finished = false, released = false;
  // The deadline counts from `start`, read before the watchdog exists, so
  // the blocked time reported is never below it.
  const auto start = std::chrono::steady_clock::now();
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mu);
    if (cv.wait_until(lock, start + kF7HangDeadline, [&] { return finished; })) return;
    released = true;
    const Frame stop{kStopFrame, 0, 0};
    (void)WriteAll(pool.data[1].get(), &stop, sizeof(stop));
  });
  Delivery d = Deliver([&](Frame* frame) -> std::optional<ObservedError> {
    if (!ReadAll(pool.data[0].get(), frame, sizeof(Frame)).ok()) {  // end of file or an error
      return ObservedError{"unavailable", 0, "data queue closed", Trainer(), "data_queue.get"};
    }
    if (frame->batch == kStopFrame) {
      return ObservedError{kF7HangName, 0, "", Trainer(), "data_queue.get"};
    }
    return std::nullopt;
  });
  {
    std::lock_guard<std::mutex> lock(mu);
    finished = true;
  }
  cv.notify_all();
  watchdog.join();
  const auto blocked = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  transcript += "received minibatches:";
  for (const auto& [b, f] : d.received) transcript += " " + std::to_string(b);
  transcript += "\n";
  if (!d.error || !released) {
    if (d.error) return Unexpected(*d.error, transcript);
    return PassedIf(false, "the documented hang (the trainer received every minibatch)", transcript);
  }
  // Proven: worker 1 is dead (KillWorker waited for it) and nothing else
  // would ever produce its minibatch.
  d.error->message = std::string(kF7HangMessage) + ": still blocked after " + std::to_string(blocked.count()) +
                     " ms although worker 1 (pid " + std::to_string(killed) +
                     ") was killed by signal 9; nothing reports the dead worker, and the queue never ends because "
                     "every process holds its write end";
  transcript += "the harness released the trainer at the deadline and ended the workers\n";
  return Reproduced(signature, *d.error, transcript);
}

// The fixed and workaround variants: the trainer's wait either watches the
// workers (PR 3474's liveness check) or gives up after `timeout_s` seconds.
Outcome RunChecked(bool liveness_check) {
  Pool pool;
  if (Status s = Prepare(pool); !s.ok()) return Unexpected(Observe(s, Trainer(), "start"), "F7\n");
  std::string transcript = Header(
      pool, liveness_check ? "a liveness check on every worker (PR 3474)"
                           : "data_queue.get(timeout=" + std::to_string(kTimeoutSeconds) + ") (PR 3474's option)");
  std::vector<pollfd> fds = {{pool.data[0].get(), POLLIN, 0}};
  std::vector<UniqueFd> pidfds;  // fds[i + 1] polls pidfds[i]
  if (liveness_check) {
    for (const ChildProcess& w : pool.workers) {
      UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, w.pid(), 0)));
      if (!pidfd.valid()) {
        const int error = errno;
        pidfds.clear();
        if (error == ENOSYS) {  // a kernel before Linux 5.3: this machine cannot show the fix
          return NotRunHere(
              "F7's fixed variant watches its workers with pidfd_open, which this kernel lacks (Linux "
              "5.3 or later has it)",
              transcript);
        }
        return Unexpected(Observe(UnavailableError(std::string("pidfd_open: ") + strerror(error)), Trainer(), "start"),
                          transcript);
      }
      fds.push_back({pidfd.get(), POLLIN, 0});  // readable once the worker has ended
      pidfds.push_back(std::move(pidfd));
    }
  }
  const auto start = std::chrono::steady_clock::now();
  Delivery d = Deliver([&](Frame* frame) -> std::optional<ObservedError> {
    for (;;) {
      int ready = poll(fds.data(), fds.size(), liveness_check ? -1 : kTimeoutSeconds * 1000);
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0)
        return ObservedError{"RuntimeError", 0, TimedOutMessage(kTimeoutSeconds), Trainer(), "data_queue.get"};
      if (fds[0].revents & POLLIN) {
        if (ReadAll(pool.data[0].get(), frame, sizeof(Frame)).ok()) return std::nullopt;
        return ObservedError{"unavailable", 0, "data queue closed", Trainer(), "data_queue.get"};
      }
      for (size_t i = 1; i < fds.size(); ++i) {
        if (!(fds[i].revents & POLLIN)) continue;
        siginfo_t info{};
        const pid_t pid = pool.workers[i - 1].pid();
        if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
            info.si_code == CLD_KILLED) {
          return ObservedError{"RuntimeError", 0, KilledWorkerMessage(pid, info.si_status), Trainer(),
                               "data_queue.get"};
        }
        return ObservedError{"RuntimeError", 0,
                             "DataLoader worker (pid(s) " + std::to_string(pid) + ") exited unexpectedly", Trainer(),
                             "data_queue.get"};
      }
    }
  });
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  pidfds.clear();
  bool equal = false;
  transcript += CheckFirstBatch(d, &equal);
  if (!d.error) return PassedIf(false, "an error for the killed worker (every minibatch arrived)", transcript);
  transcript += "the trainer stopped after " + std::to_string(took.count()) + " ms with: " + d.error->name + ": " +
                d.error->message + "\n";
  const std::string expected = liveness_check ? KilledWorkerMessage(pool.workers[kKilledWorker].pid(), SIGKILL)
                                              : TimedOutMessage(kTimeoutSeconds);
  Outcome outcome =
      PassedIf(equal && d.waiting_for == 1 && d.error->message == expected,
               "minibatch 0 arrived intact and the wait for minibatch 1 ended with \"" + expected + "\"", transcript);
  outcome.error = d.error;
  return outcome;
}

const bool kRegistered = RegisterFailure(
    Failure{"F7",
            "a killed data-loader worker hangs the trainer (PyTorch PR 3474 / 11985)",
            {
                Reproduces("legacy", "worker 1 killed; the trainer reads the shared data queue unchecked",
                           OnEveryRuntime(kF7LegacyHang), RunLegacy),
                Passes("fixed", "worker 1 killed; the trainer's wait watches every worker (PR 3474)",
                       [](RuntimeKind) { return RunChecked(/*liveness_check=*/true); }),
                Passes("workaround", "worker 1 killed; DataLoader(timeout=1) gives up instead of hanging",
                       [](RuntimeKind) { return RunChecked(/*liveness_check=*/false); }),
            }});

}  // namespace
}  // namespace repro
}  // namespace faultline
