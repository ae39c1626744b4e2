// F8 — the pin-memory thread creates a context on device 0 (PyTorch PR 4196
// sets the device in the pin thread; see issues 21081 and 58626). A
// loader-like pipeline trains on device 1: a separate pin-memory thread
// copies each batch into page-locked memory (cudaMallocHost) and the trainer
// thread copies it to device 1 and back. The rows that come back must equal
// the host rows, and only device 1 may have a primary context.
// docs/failures/F8.md.
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "repro/F8/signature.h"
#include "repro/registry.h"
#include "repro/scenario_support.h"

namespace faultline {
namespace repro {
namespace {

constexpr int kTrainDevice = 1;
constexpr int kBatches = 4;
constexpr size_t kBatchFloats = 16 * 8;

std::vector<float> HostRows() {
  std::vector<float> rows(kBatches * kBatchFloats);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<float>(i) * 0.75f - 3.0f;
  return rows;
}

struct PinnedBatch {
  float* data = nullptr;
  int index = 0;
};

// The queue between the pin-memory thread and the trainer (the DataLoader's
// data queue). The pin thread ends it with `done`, or with `error`.
struct PinQueue {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<PinnedBatch> batches;
  bool done = false;
  std::optional<ObservedError> error;         // a failed CUDA call in the pin thread
  std::optional<ObservedError> context_on_0;  // what the pin thread did to device 0
};

std::string PinThreadLabel() { return "pin-memory thread (pid " + std::to_string(getpid()) + ")"; }

// The pin-memory thread: PyTorch's pinning loop (_worker_manager_loop when
// PR 4196 changed it, later _pin_memory_loop). With `set_device`, it first
// makes the trainer's device current (PR 4196); without, its current device
// is the default, 0, as in every new host thread.
void PinMemoryLoop(DeviceRuntime& rt, bool set_device, const std::vector<float>& rows, PinQueue* q) {
  auto fail = [&](const Status& s, const char* step) {
    std::lock_guard<std::mutex> lock(q->mu);
    q->error = Observe(s, PinThreadLabel(), step);
    q->done = true;
    q->cv.notify_all();
  };
  if (set_device) {
    if (Status s = rt.SetDevice(kTrainDevice); !s.ok()) return fail(s, "set_device");
  }
  for (int b = 0; b < kBatches; ++b) {
    Result<bool> before = rt.PrimaryContextActive(0);
    Result<void*> pinned = rt.MallocHost(kBatchFloats * sizeof(float));  // tensor.pin_memory()
    if (!pinned.ok()) return fail(pinned.status(), "pin_memory");
    Result<bool> after = rt.PrimaryContextActive(0);
    std::memcpy(*pinned, rows.data() + b * kBatchFloats, kBatchFloats * sizeof(float));
    std::lock_guard<std::mutex> lock(q->mu);
    if (before.ok() && after.ok() && !*before && *after && !q->context_on_0) {
      Result<int> current = rt.GetDevice();
      q->context_on_0 = ObservedError{kF8ErrorName, 0,
                                      std::string(kF8Message) + " (its current device is " +
                                          (current.ok() ? std::to_string(*current) : "?") +
                                          "); the trainer uses only device " + std::to_string(kTrainDevice),
                                      PinThreadLabel(), "pin_memory"};
    }
    q->batches.push_back(PinnedBatch{static_cast<float*>(*pinned), b});
    q->cv.notify_all();
  }
  std::lock_guard<std::mutex> lock(q->mu);
  q->done = true;
  q->cv.notify_all();
}

// The trainer's step for one batch: host-to-device from pinned memory on
// device 1, then back to the host to check the bits.
Status TrainStep(DeviceRuntime& rt, const PinnedBatch& batch, std::vector<float>* out) {
  const size_t bytes = kBatchFloats * sizeof(float);
  FL_ASSIGN_OR_RETURN(void* device, rt.Malloc(bytes));
  Status s = rt.Memcpy(device, batch.data, bytes, MemcpyKind::kHostToDevice);
  if (s.ok()) s = rt.Memcpy(out->data() + batch.index * kBatchFloats, device, bytes, MemcpyKind::kDeviceToHost);
  Status freed = rt.Free(device);
  return s.ok() ? freed : s;
}

Outcome Run(RuntimeKind kind, bool set_device_in_pin_thread, const Expected& expected) {
  DeviceRuntime& rt = GetRuntime(kind);
  std::string transcript =
      std::string("F8: the trainer uses device ") + std::to_string(kTrainDevice) + "; a pin-memory thread " +
      (set_device_in_pin_thread ? "that first sets device 1 (PR 4196)" : "with the default device") + " pins " +
      std::to_string(kBatches) + " batches with cudaMallocHost\n";
  // Counting through NVML does not initialize CUDA or create a context.
  Result<int> visible = rt.NvmlDeviceCount();
  if (!visible.ok()) return Unexpected(Observe(visible.status(), "main process", "device_count"), transcript);
  if (*visible < 2) {
    return NotRunHere("F8 needs 2 GPUs (it trains on device 1); NVML reports " + std::to_string(*visible) +
                          " (simcuda gets FAULTLINE_SIMCUDA_DEVICES=2 from the variant; on real CUDA, run on a "
                          "machine with 2 or more GPUs)",
                      transcript);
  }
  const std::string trainer = "trainer (pid " + std::to_string(getpid()) + ")";
  if (Status s = rt.SetDevice(kTrainDevice); !s.ok()) return Unexpected(Observe(s, trainer, "set_device"), transcript);

  const std::vector<float> rows = HostRows();
  std::vector<float> out(rows.size(), 0.0f);
  PinQueue q;
  std::thread pin_thread(PinMemoryLoop, std::ref(rt), set_device_in_pin_thread, std::cref(rows), &q);
  std::optional<ObservedError> trainer_error;
  for (;;) {
    std::unique_lock<std::mutex> lock(q.mu);
    q.cv.wait(lock, [&] { return !q.batches.empty() || q.done; });
    if (q.batches.empty()) break;
    PinnedBatch batch = q.batches.front();
    q.batches.pop_front();
    lock.unlock();
    if (!trainer_error) {
      if (Status s = TrainStep(rt, batch, &out); !s.ok()) trainer_error = Observe(s, trainer, "copy_to_device");
    }
    if (Status s = rt.FreeHost(batch.data); !s.ok() && !trainer_error) trainer_error = Observe(s, trainer, "free_host");
  }
  pin_thread.join();
  if (q.error) return Unexpected(*q.error, transcript);
  if (trainer_error) return Unexpected(*trainer_error, transcript);

  Result<bool> ctx0 = rt.PrimaryContextActive(0);
  Result<bool> ctx1 = rt.PrimaryContextActive(kTrainDevice);
  if (!ctx0.ok()) return Unexpected(Observe(ctx0.status(), trainer, "context_check"), transcript);
  if (!ctx1.ok()) return Unexpected(Observe(ctx1.status(), trainer, "context_check"), transcript);
  transcript += std::string("primary contexts: device 0 ") + (*ctx0 ? "active" : "inactive") + ", device 1 " +
                (*ctx1 ? "active" : "inactive") + "\n";
  const bool equal = out == rows;
  transcript += std::string("rows copied through device 1 ") + (equal ? "equal" : "DIFFER from") + " the host rows\n";
  if (*ctx0) {
    ObservedError error = q.context_on_0
                              ? *q.context_on_0
                              : ObservedError{kF8ErrorName, 0, "primary context created on device 0 by the trainer",
                                              trainer, "train_step"};
    return EndedInError(expected, error, transcript);
  }
  if (auto missed = RanToTheEnd(expected, "device 0 has no context", transcript)) return *missed;
  return PassedIf(equal && *ctx1, "the rows equal the host rows and only device 1 has a primary context", transcript);
}

const VariantEnv kTwoDevices = {{"FAULTLINE_SIMCUDA_DEVICES", "2"}};

const bool kRegistered = RegisterFailure(
    Failure{"F8",
            "the pin-memory thread creates a context on device 0 (PyTorch PR 4196; see 21081, 58626)",
            {
                Reproduces(
                    "legacy", "train on device 1, pin in a thread left on device 0 (2 devices)",
                    OnEveryRuntime(kF8LegacyPinThread),
                    [](RuntimeKind rt, const Signature& s) { return Run(rt, false, ExpectSignature{s}); }, kTwoDevices),
                Passes(
                    "fixed", "train on device 1, the pin thread sets device 1 first (2 devices)",
                    [](RuntimeKind rt) { return Run(rt, true, ExpectPass{}); }, kTwoDevices),
            }});

}  // namespace
}  // namespace repro
}  // namespace faultline
