// Implements the worker side of the data loader (worker_loop.h).
#include "reference/loader/worker_loop.h"

#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "reference/loader/data_loader.h"
#include "reference/loader/shared_memory.h"
#include "reference/loader/wire_protocol.h"
#include "reference/process/child_registry.h"

namespace faultline {
namespace {

// Parses a non-negative decimal int (a descriptor or worker index from the
// command line); no exceptions, no silent garbage.
Result<int> ParseSmallInt(const std::string& text, const char* what) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) {
    return InvalidArgumentError(std::string("spawned worker: ") + what + " is '" + text +
                                "'; expected a non-negative integer");
  }
  return std::atoi(text.c_str());
}

// Spawned entry: args = SpawnedWorkerArgs'. Malformed arguments (which only a
// broken parent could pass) end the worker with exit code 2.
int SpawnedWorkerMain(const std::vector<std::string>& args) {
  if (args.size() != 6) return 2;
  std::vector<int> slot_fds;
  for (size_t start = 0; start <= args[2].size();) {
    const size_t comma = std::min(args[2].find(',', start), args[2].size());
    Result<int> fd = ParseSmallInt(args[2].substr(start, comma - start), "slot descriptor");
    if (!fd.ok()) return 2;
    slot_fds.push_back(*fd);
    start = comma + 1;
  }
  Result<int> index = ParseSmallInt(args[3], "worker index");
  Result<int> task_fd = ParseSmallInt(args[4], "task descriptor");
  Result<int> result_fd = ParseSmallInt(args[5], "result descriptor");
  if (!index.ok() || !task_fd.ok() || !result_fd.ok() || slot_fds.size() != kPrefetchPerWorker) return 2;
  InjectionInWorker().At("started", *index);
  Result<LoaderOptions> o = OptionsFromJson(args[0]);
  if (!o.ok() || o->num_workers < 1) return 2;  // it picks segment slots by num_workers
  return RunWorker(*o, nullptr, args[1], slot_fds, *index, *task_fd, *result_fd);
}
FL_REGISTER_CHILD(kSpawnedWorkerEntry, SpawnedWorkerMain);

}  // namespace

std::vector<std::string> SpawnedWorkerArgs(const LoaderOptions& o, const std::string& shm_prefix,
                                           const std::vector<int>& slot_fds, int index, int task_fd, int result_fd) {
  std::string fds;
  for (int fd : slot_fds) fds += (fds.empty() ? "" : ",") + std::to_string(fd);
  return {OptionsToJson(o), shm_prefix, fds, std::to_string(index), std::to_string(task_fd), std::to_string(result_fd)};
}

void FaultInjection::At(const char* here, int index) const {
  if (!Targets(here, index)) return;
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

Result<FaultInjection> FaultInjectionFromEnv() {
  const char* text = std::getenv(kInjectEnv);
  FaultInjection injection;
  if (text == nullptr || *text == '\0') return injection;
  const std::string spec = text;
  auto bad = [&] {
    return InvalidArgumentError(std::string(kInjectEnv) + " is '" + spec +
                                "'; expected STEP:ACTION[:WORKER] with STEP one of started, before_restore, "
                                "after_restore, after_task, mid_write, after_write, after_answer and ACTION one of "
                                "sigkill, sigsegv, exit3, hang, misindex, badframe, misanswer, stall, cutoff (the "
                                "last five after_write only)");
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
  const bool breaks_protocol = known(injection.action, kProtocolActions);
  if (!known(injection.step, kInjectSteps) || !(breaks_protocol || known(injection.action, kProcessActions))) {
    return bad();
  }
  if (breaks_protocol && injection.step != "after_write") return bad();
  return injection;
}

// A worker allocates and frees the same tens of megabytes for every
// minibatch. By default glibc serves blocks that large with mmap and hands
// them (and the top of the heap) back to the kernel when freed, so the next
// minibatch faults them in again, zeroed page by page. A worker is a process
// of its own with one job, so it keeps what it frees. (A forked worker of a
// parent that has run a while inherits glibc's raised thresholds; a spawned
// one started from the defaults, which made it ~20 % slower.)
void KeepFreedMemoryForTheNextMinibatch() {
  mallopt(M_MMAP_MAX, 0);                    // every block from the heap, none mapped alone
  mallopt(M_TRIM_THRESHOLD, 1 << 30);        // and the heap not shrunk below its peak
}

FaultInjection InjectionInWorker() {
  Result<FaultInjection> injection = FaultInjectionFromEnv();
  return injection.ok() ? *injection : FaultInjection{};
}
int RunWorker(const LoaderOptions& o, std::shared_ptr<LoaderDataset> inherited, const std::string& shm_prefix,
              const std::vector<int>& slot_fds, int index, int task_fd, int result_fd) {
  KeepFreedMemoryForTheNextMinibatch();
  const FaultInjection inject = InjectionInWorker();
  auto reply = [&](int64_t batch, const std::string& message) { return wire::WriteAnswer(result_fd, batch, message); };
  // A startup failure is reported as the answer to the first task.
  Result<std::vector<std::vector<int64_t>>> batches = InternalError("unset");
  inject.At("before_restore", index);
  // Its segment slots (data_loader.h), which the parent created.
  std::unique_ptr<SegmentWriter> segments[kPrefetchPerWorker];
  for (int slot = 0; slot < kPrefetchPerWorker; ++slot) {
    segments[slot] = std::make_unique<SegmentWriter>(WorkerSegmentName(shm_prefix, index, slot), slot_fds[slot]);
  }
  // The worker's largest minibatch so far: a new slot starts with room for
  // it (and a quarter more), so that it is mapped once, by both processes,
  // instead of growing layer by layer as the first slot did.
  size_t largest_minibatch = 0;
  Result<std::shared_ptr<LoaderDataset>> data = PrepareWorkerDataset(o, std::move(inherited));
  inject.At("after_restore", index);
  if (data.ok()) batches = LoaderBatches(o, **data);
  for (;;) {
    int64_t batch = 0;
    auto got = wire::ReadAll(task_fd, &batch, sizeof(batch));
    if (!got.ok() || !*got || batch == kStopTask) return 0;
    inject.At("after_task", index);
    if (!data.ok()) {
      reply(batch, wire::ErrorToWire(data.status(), "restore_state"));
      return 1;
    }
    if (!batches.ok()) {
      reply(batch, wire::ErrorToWire(batches.status(), "item_sampler"));
      return 1;
    }
    if (batch < 0 || batch >= static_cast<int64_t>(batches->size())) {
      reply(batch, wire::ErrorToWire(InternalError("task for minibatch " + std::to_string(batch) + " is out of range"),
                               "receive_task"));
      return 1;
    }
    std::string step;
    const int slot = SegmentSlotOf(batch, o.num_workers);
    Status status = segments[slot]->Reserve(largest_minibatch);  // names the segment and the bytes
    if (!status.ok()) {
      step = "write_shared_memory";
    } else {
      status = ProduceMiniBatchInto(**data, o, batch, (*batches)[batch], &step, *segments[slot],
                                    [&] { inject.At("mid_write", index); });
    }
    largest_minibatch = std::max(largest_minibatch, segments[slot]->size());
    if (status.ok()) inject.At("after_write", index);
    if (status.ok() && inject.Breaks("misindex", "after_write", index)) {
      const int64_t wrong = batch + 1000;  // the index field follows the 8-byte magic word
      std::memcpy(segments[slot]->At(sizeof(uint64_t)), &wrong, sizeof(wrong));
    }
    if (status.ok() && inject.Breaks("badframe", "after_write", index)) {
      const int64_t header[2] = {batch, -1};  // a frame no worker writes: a negative message length
      (void)wire::WriteAll(result_fd, header, sizeof(header));
      continue;
    }
    if (status.ok() && (inject.Breaks("stall", "after_write", index) || inject.Breaks("cutoff", "after_write", index))) {
      (void)wire::WriteAll(result_fd, &batch, sizeof(batch));  // half a frame header
      if (inject.action == "cutoff") _exit(3);
      for (;;) pause();
    }
    const int64_t answered = inject.Breaks("misanswer", "after_write", index) ? batch + 1000 : batch;
    if (!reply(answered, status.ok() ? "" : wire::ErrorToWire(status, step)) || !status.ok()) return status.ok() ? 0 : 1;
    inject.At("after_answer", index);
  }
}
}  // namespace faultline
