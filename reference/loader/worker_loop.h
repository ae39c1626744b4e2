// The worker side of the data loader: the loop a forked or spawned worker
// runs (take a minibatch index, produce it, write it to shared memory,
// answer) and its spawned entry point; it applies the test-only fault
// injection of fault_injection.h. Internal to //reference/loader (listed in
// data_loader's srcs).
#ifndef FAULTLINE_REFERENCE_LOADER_WORKER_LOOP_H_
#define FAULTLINE_REFERENCE_LOADER_WORKER_LOOP_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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

// The worker loop, shared by forked and spawned workers: a forked worker
// passes the parent's dataset as `inherited`, a spawned one nullptr.
// `slot_fds` are its kPrefetchPerWorker slots' segments (data_loader.h).
// Returns the worker's exit code.
int RunWorker(const LoaderOptions& o, std::shared_ptr<LoaderDataset> inherited, const std::string& shm_prefix,
              const std::vector<int>& slot_fds, int index, int task_fd, int result_fd);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_LOADER_WORKER_LOOP_H_
