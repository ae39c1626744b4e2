// Provides DataLoader: item sampler -> multi-layer sampling -> feature fetch
// -> copy to device, in GraphBolt's modes (cpu-cpu, cpu-cuda, pinned-cuda,
// cuda-cuda), inline (num_workers = 0) or in worker processes started by fork
// or spawn that return minibatches through shared memory, in order.
// Minibatch i is bit-identical for every mode, num_workers and start method.
// A worker that fails, dies or hangs (see LoaderOptions::timeout) becomes an
// error naming it, its pid, the step and the minibatch; what the worker left
// (its error report, else its exit status or signal) always wins over the
// broken connection that revealed it. No path leaves a worker process or a
// shared-memory segment behind (segments are unnamed memfds, which go with
// their last descriptor and mapping).
#ifndef FAULTLINE_REFERENCE_LOADER_DATA_LOADER_H_
#define FAULTLINE_REFERENCE_LOADER_DATA_LOADER_H_

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reference/base/status.h"
#include "reference/loader/loader_options.h"
#include "reference/loader/minibatch.h"
#include "reference/process/process.h"

namespace faultline {

struct LoaderDataset;  // internal: reference/loader/loader_dataset.h

// Where a failed minibatch failed.
struct LoaderFailure {
  int worker = -1;  // -1: the main process
  pid_t pid = 0;
  std::string step;  // restore_state, sample_neighbors, fetch_features, copy_to_device, ...
  int64_t minibatch = 0;

  // Returns "worker 1 (pid 4242)" or "main process (pid 4242)".
  std::string Process() const;
};

class DataLoader {
 public:
  // Validates the options, loads the dataset and starts the workers. The
  // workers die with the thread that calls Create (PR_SET_PDEATHSIG follows
  // the forking thread, so that no worker outlives a killed parent): call it
  // on a thread that outlives the loader. With start_method spawn, the
  // binary's main must call MaybeRunRegisteredChild first (child_registry.h).
  static Result<std::unique_ptr<DataLoader>> Create(const LoaderOptions& options);
  ~DataLoader();

  int64_t num_batches() const { return static_cast<int64_t>(batches_.size()); }
  // Returns the next minibatch, std::nullopt after the last one, or the
  // error of the worker that produced it (after which the loader is done).
  // With workers it is NextView's minibatch copied out (so a view still
  // held from NextView can make it fail as NextView does).
  Result<std::optional<MiniBatch>> Next();
  // Next() without the copy out of a worker's shared memory: the view's
  // arrays lie in the worker's segment slot, which the view holds (and
  // keeps mapped, even past the loader's end) until it and its copies are
  // dropped. A held slot takes no new minibatch: asking for the minibatch
  // that is due in it is a FailedPrecondition error that leaves the loader
  // as it was (drop the view, then ask again). Slots are reused every
  // kPrefetchPerWorker * num_workers minibatches. Without workers, the view
  // holds the minibatch the main process built. With workers, a view's bytes
  // are not mapped in a process forked after it was taken (MADV_DONTFORK).
  Result<std::optional<MiniBatchView>> NextView();
  // Returns the pids of the worker processes (for fault-injection tests).
  std::vector<pid_t> worker_pids() const;
  // Returns where the failed Next() failed; empty before any failure.
  const std::optional<LoaderFailure>& failure() const { return failure_; }
  // Sets LoaderOptions::timeout for the minibatches asked for from now on:
  // e.g. a long one while the workers start, a short one once they run (a
  // test times only a fault this way, not the workers' start). Checked as
  // Create checks it; an InvalidArgument error leaves the timeout as it was.
  Status SetTimeout(std::chrono::milliseconds timeout);

 private:
  struct Worker;    // a worker process and its two sockets (data_loader.cc)
  struct Released;  // the minibatches whose views were dropped (data_loader.cc)

  DataLoader() = default;
  Status StartWorkers();
  // Creates worker `w`'s segments and sockets and starts its process.
  Status StartWorker(int w);
  // Writes task `batch` to `worker`; when the write fails, collects what the
  // worker left, to be reported when Next() reaches its minibatches.
  void SendTask(Worker& worker, int64_t batch);
  // Sends every task whose segment slot is free, in order.
  void SendTasks();
  // Builds minibatch `batch` in this process (num_workers = 0).
  Result<MiniBatch> Build(int64_t batch);
  Result<MiniBatchView> Receive(Worker& worker, int64_t batch);
  Result<MiniBatchView> Accept(Worker& worker, int64_t batch);
  void Collect(Worker& worker, const std::string& transport);
  bool ReadAnswers(Worker& worker, std::string* transport);
  Status BrokeProtocol(Worker& worker, int64_t batch, const std::string& what);
  Status WorkerEnded(Worker& worker, int64_t batch);
  // `still_sending`: bytes of its answer arrived after the first ones this
  // wait saw (a worker that trickles its answer), not only before.
  Status TimedOut(Worker& worker, int64_t batch, bool still_sending);
  // cpu-cuda: copies the features to the device.
  Status CopyToDevice(ArrayView<float> features, int64_t feature_dim, int64_t batch, Tensor* on_device);
  // Ends the loader with `error` (failed loaders kill their workers).
  Status Fail(Status error);
  void Shutdown();

  LoaderOptions options_;
  std::shared_ptr<LoaderDataset> dataset_;
  std::vector<std::vector<int64_t>> batches_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::shared_ptr<Released> released_;
  int64_t next_ = 0;
  int64_t next_task_ = 0;
  bool failed_ = false;
  std::optional<LoaderFailure> failure_;
  std::string shm_prefix_;
};

// Returns the prefix of the shared-memory segments this process's loaders
// create, "/faultline-<pid>-<nonce>-" (ProcessSegmentPrefix).
std::string LoaderSegmentPrefix();

// The most workers a loader starts. Each is a process with its own copy of
// the sampler's work, so past the cores of any machine more only compete;
// a typo (100000) would otherwise fork until a system limit failed.
constexpr int kMaxWorkers = 1024;
// Each worker is kept this many tasks ahead. Worker w gets minibatches w,
// w + num_workers, ...; its k-th is written to its segment slot
// k % kPrefetchPerWorker: the parent sends task k + kPrefetchPerWorker
// only once task k's view is dropped, so a slot is never written while read.
constexpr int kPrefetchPerWorker = 2;

// The descriptors the main process holds for each worker: its segment
// slots, its two sockets, the report pipe and the pidfd of its process
// (what RLIMIT_NOFILE must leave room for, beside the application's own).
constexpr int kDescriptorsPerWorker = kPrefetchPerWorker + 4;

// Returns the slot that minibatch `batch` is written to (see above).
int SegmentSlotOf(int64_t batch, int num_workers);

// Returns the name of worker `worker`'s segment slot `slot` under
// `prefix`. The parent creates each slot's segment before it starts the
// worker, as an unnamed memfd (CreateUnlinkedSegment); the worker inherits
// the descriptor. The name labels it in messages and /proc/PID/fd.
std::string WorkerSegmentName(const std::string& prefix, int worker, int slot);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_LOADER_DATA_LOADER_H_
