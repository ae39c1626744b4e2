// Implements the worker side of the data loader (worker_loop.h).
#include "reference/loader/worker_loop.h"

#include <malloc.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <memory>
#include <new>

#include "reference/base/parse_int.h"
#include "reference/loader/data_loader.h"
#include "reference/loader/fault_injection.h"
#include "reference/loader/shared_memory.h"
#include "reference/loader/wire_protocol.h"
#include "reference/process/child_registry.h"
#include "reference/process/process.h"
#include "reference/sampling/sample_neighbors.h"

namespace faultline {
namespace {

// Parses all of `text` as a non-negative int (a descriptor or worker index
// from the command line): no sign, no trailing characters, no overflow.
Result<int> ParseSmallInt(const std::string& text, const char* what) {
  const std::optional<int> value = ParseWholeNonNegative<int>(text);
  if (!value) {
    return InvalidArgumentError(std::string("spawned worker: ") + what + " is '" + text +
                                "'; expected an integer in 0.." + std::to_string(std::numeric_limits<int>::max()));
  }
  return *value;
}

// The error of an exception that escaped a step of the worker.
Status UncaughtException() { return InternalError("uncaught exception " + DescribeCurrentException()); }

// The injection's trickle: an answer frame for `batch` whose message (an
// error report of 1 MiB) comes one byte every 2 ms; never returns.
[[noreturn]] void Trickle(int result_fd, int64_t batch) {
  const int64_t header[2] = {batch, int64_t{1} << 20};
  const size_t frame = sizeof(header) + (size_t{1} << 20);
  for (size_t sent = 0; sent < frame; ++sent) {
    const char byte = sent < sizeof(header) ? reinterpret_cast<const char*>(header)[sent] : ' ';
    if (!wire::WriteAll(result_fd, &byte, 1).ok()) _exit(3);
    if (sent == 0) MarkInjectedFaultStarted();
    const timespec two_ms{0, 2000000};
    nanosleep(&two_ms, nullptr);
  }
  for (;;) pause();
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
  InjectionInWorker().At(InjectStep::kStarted, *index);
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

// A worker allocates and frees the same tens of megabytes for every
// minibatch. By default glibc serves blocks that large with mmap and hands
// them (and the top of the heap) back to the kernel when freed, so the next
// minibatch faults them in again, zeroed page by page. A worker is a process
// of its own with one job, so it keeps what it frees. (A forked worker of a
// parent that has run a while inherits glibc's raised thresholds; a spawned
// one started from the defaults, which made it ~20 % slower.)
void KeepFreedMemoryForTheNextMinibatch() {
  mallopt(M_MMAP_MAX, 0);              // every block from the heap, none mapped alone
  mallopt(M_TRIM_THRESHOLD, 1 << 30);  // and the heap not shrunk below its peak
}

int RunWorker(const LoaderOptions& o, std::shared_ptr<LoaderDataset> inherited, const std::string& shm_prefix,
              const std::vector<int>& slot_fds, int index, int task_fd, int result_fd) {
  KeepFreedMemoryForTheNextMinibatch();
  const FaultInjection inject = InjectionInWorker();
  auto reply = [&](int64_t batch, const std::string& message) { return wire::WriteAnswer(result_fd, batch, message); };
  // A startup failure is reported as the answer to the first task.
  Result<std::vector<std::vector<int64_t>>> batches = InternalError("unset");
  inject.At(InjectStep::kBeforeRestore, index);
  // Its segment slots (data_loader.h), which the parent created.
  std::unique_ptr<SegmentWriter> segments[kPrefetchPerWorker];
  for (int slot = 0; slot < kPrefetchPerWorker; ++slot) {
    segments[slot] = std::make_unique<SegmentWriter>(WorkerSegmentName(shm_prefix, index, slot), slot_fds[slot]);
  }
  // The worker's largest minibatch so far: a new slot starts with room for
  // it (and a quarter more), so that it is mapped once, by both processes,
  // instead of growing layer by layer as the first slot did.
  size_t largest_minibatch = 0;
  int64_t answers_sent = 0;  // for the injection's after_answer protocol actions
  // The throw injection: once armed, every chunk the sampler takes throws,
  // in whichever of its threads takes it.
  std::atomic<bool> sampler_throws{false};
  // An exception (std::bad_alloc, one a sampler thread threw and the
  // sampler rethrew here) becomes the error of the step it escaped, like
  // any other failure of the step: it must not unwind out of the worker,
  // whose callers in a forked worker are the parent's.
  Result<std::shared_ptr<LoaderDataset>> data = InternalError("unset");
  try {
    data = PrepareWorkerDataset(o, std::move(inherited));
  } catch (...) {
    data = UncaughtException();
  }
  inject.At(InjectStep::kAfterRestore, index);
  if (data.ok()) {
    try {
      batches = LoaderBatches(o, **data);
    } catch (...) {
      batches = UncaughtException();
    }
  }
  for (;;) {
    int64_t batch = 0;
    auto got = wire::ReadAll(task_fd, &batch, sizeof(batch));
    if (!got.ok() || !*got || batch == kStopTask) return 0;
    inject.At(InjectStep::kAfterTask, index);
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
    std::string step = "write_shared_memory";
    const int slot = SegmentSlotOf(batch, o.num_workers);
    Status status;
    try {
      status = segments[slot]->Reserve(largest_minibatch);  // names the segment and the bytes
      if (status.ok()) {
        status = ProduceMiniBatchInto(
            **data, o, batch, (*batches)[batch], &step, *segments[slot],
            [&] {
              inject.At(InjectStep::kMidWrite, index);
              if (inject.Breaks(InjectAction::kThrow, InjectStep::kMidWrite, index)) sampler_throws = true;
            },
            [&] {
              if (sampler_throws.load()) throw std::bad_alloc();
            });
      }
    } catch (...) {
      status = UncaughtException();
    }
    largest_minibatch = std::max(largest_minibatch, segments[slot]->size());
    if (status.ok()) inject.At(InjectStep::kAfterWrite, index);
    auto breaks = [&](InjectAction how) { return status.ok() && inject.BreaksAnswer(how, index, answers_sent); };
    if (breaks(InjectAction::kMisindex)) {
      const int64_t wrong = batch + 1000;  // the index field follows the 8-byte magic word
      std::memcpy(segments[slot]->At(sizeof(uint64_t)), &wrong, sizeof(wrong));
    }
    if (breaks(InjectAction::kBadframe)) {
      const int64_t header[2] = {batch, -1};  // a frame no worker writes: a negative message length
      (void)wire::WriteAll(result_fd, header, sizeof(header));
      ++answers_sent;
      continue;
    }
    if (breaks(InjectAction::kStall) || breaks(InjectAction::kCutoff)) {
      (void)wire::WriteAll(result_fd, &batch, sizeof(batch));  // half a frame header
      if (inject.action == InjectAction::kCutoff) _exit(3);
      MarkInjectedFaultStarted();
      for (;;) pause();
    }
    if (breaks(InjectAction::kTrickle)) Trickle(result_fd, batch);
    const int64_t answered = breaks(InjectAction::kMisanswer) ? batch + 1000 : batch;
    if (!reply(answered, status.ok() ? "" : wire::ErrorToWire(status, step)) || !status.ok())
      return status.ok() ? 0 : 1;
    ++answers_sent;
    inject.At(InjectStep::kAfterAnswer, index);
  }
}
}  // namespace faultline
