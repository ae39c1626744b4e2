// The worker side of the data loader: the loop a forked or spawned worker
// runs (take a minibatch index, produce it, write it to shared memory,
// answer), its spawned entry point, and the test-only fault injection
// (docs/reliability.md). Internal to //reference/loader (listed in
// data_loader's srcs).
#ifndef FAULTLINE_REFERENCE_LOADER_WORKER_LOOP_H_
#define FAULTLINE_REFERENCE_LOADER_WORKER_LOOP_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "reference/base/status.h"
#include "reference/loader/loader_dataset.h"
#include "reference/loader/loader_options.h"

namespace faultline {

// The task that tells a worker to stop.
inline constexpr int64_t kStopTask = -1;
// The registered child entry of spawned workers; its arguments are
// SpawnedWorkerArgs'.
inline constexpr char kSpawnedWorkerEntry[] = "faultline_loader_worker";

// Returns the arguments of a spawned worker: the options JSON, the segment
// prefix, its slots' segment descriptors (comma-separated), the worker
// index and its two socket descriptors.
std::vector<std::string> SpawnedWorkerArgs(const LoaderOptions& o, const std::string& shm_prefix,
                                           const std::vector<int>& slot_fds, int index, int task_fd, int result_fd);

// Test-only fault injection (docs/reliability.md): the environment variable
// FAULTLINE_LOADER_INJECT = "STEP:ACTION[:WORKER]" makes a worker (every one,
// or only worker WORKER) fail at STEP by ACTION. Production never sets it.
inline constexpr char kInjectEnv[] = "FAULTLINE_LOADER_INJECT";
inline constexpr const char* kInjectSteps[] = {"started",     "before_restore", "after_restore", "after_task",
                                        "mid_write",   "after_write",    "after_answer"};
// The actions that end or stall the process, at any step.
inline constexpr const char* kProcessActions[] = {"sigkill", "sigsegv", "exit3", "hang"};
// The actions that break the protocol instead, at after_write only:
// misindex writes another minibatch index into the finished slot and
// answers as if nothing happened (DataLoader's read_shared_memory check);
// badframe answers with a frame header whose length is -1; misanswer
// answers for another minibatch (its own + 1000); stall sends the first 8
// bytes of its answer and then hangs; cutoff sends them and exits with 3.
inline constexpr const char* kProtocolActions[] = {"misindex", "badframe", "misanswer", "stall", "cutoff"};

struct FaultInjection {
  std::string step;    // empty: nothing injected
  std::string action;
  int worker = -1;     // -1: every worker

  // Whether the injection is for worker `index` at step `here`.
  bool Targets(const char* here, int index) const { return step == here && (worker < 0 || worker == index); }
  // Fails the calling worker `index` here when `here` is the injected step.
  void At(const char* here, int index) const;
  // Whether the calling worker `index` is to break the protocol by `how`
  // (one of kProtocolActions) at `here`.
  bool Breaks(const char* how, const char* here, int index) const { return action == how && Targets(here, index); }
};

// Parses FAULTLINE_LOADER_INJECT; an unset variable injects nothing, a
// malformed one is an InvalidArgument error saying what is expected.
Result<FaultInjection> FaultInjectionFromEnv();
// The injection a worker applies (the parent validated the variable first).
FaultInjection InjectionInWorker();

// The worker loop, shared by forked and spawned workers: a forked worker
// passes the parent's dataset as `inherited`, a spawned one nullptr.
// `slot_fds` are its kPrefetchPerWorker slots' segments (data_loader.h).
// Returns the worker's exit code.
int RunWorker(const LoaderOptions& o, std::shared_ptr<LoaderDataset> inherited, const std::string& shm_prefix,
              const std::vector<int>& slot_fds, int index, int task_fd, int result_fd);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_LOADER_WORKER_LOOP_H_
