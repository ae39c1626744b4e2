// Provides the simulated CUDA runtime (simcuda): the process-level semantics
// of the real CUDA runtime on a machine without a GPU. docs/simcuda.md is its
// specification; the conformance test checks each claim against real CUDA.
#ifndef FAULTLINE_REFERENCE_RUNTIME_SIMCUDA_RUNTIME_H_
#define FAULTLINE_REFERENCE_RUNTIME_SIMCUDA_RUNTIME_H_

#include <driver_types.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "reference/runtime/runtime.h"

namespace faultline {

class SimCudaRuntime final : public DeviceRuntime {
 public:
  // Reads the simulated machine (simulated_machine.h: FAULTLINE_SIMCUDA_DEVICES,
  // default 1, and the devices' memory, name and compute capability) and
  // FAULTLINE_SIMCUDA_DRIVER ("none" = no driver, "stub" = the toolkit's
  // stub libcuda); CUDA_VISIBLE_DEVICES is read at initialization.
  SimCudaRuntime();

  RuntimeKind kind() const override { return RuntimeKind::kSimCuda; }
  // Initializes the driver first (cuInit, no context), as the CUDA
  // backend's query does.
  Result<bool> PrimaryContextActive(int device) override;

  // Returns whether this process (or the parent it was forked from) has
  // initialized simulated CUDA.
  bool initialized();
  // Returns where CUDA was first initialized, one frame per line
  // ("#0 function at file:line"); empty when not initialized. When the
  // process runs Python, its frames come first, under "Python (most recent
  // call first):", then the native ones under "Native:".
  std::string InitializationSite();

  // --- What the drop-in libraries (reference/dropin) add to DeviceRuntime.

  // One simulated device as cudaGetDeviceProperties describes it.
  struct DeviceDescription {
    std::string name;
    size_t memory_bytes = 0;
    int major = 0;
    int minor = 0;
    std::string uuid;  // "GPU-5eed0000-..."
    int physical = 0;  // its ordinal before CUDA_VISIBLE_DEVICES
  };
  // Describes visible device `device`; initializes CUDA as any runtime call.
  Result<DeviceDescription> Describe(int device, SourceLocation loc = SourceLocation::Current());
  // Runs the checks of runtime call `api` (initialization, fork poisoning,
  // and with `needs_context` the current device's primary context, created
  // on first use, and the sticky error), for calls the interface has no
  // method for (cudaDeviceGetStreamPriorityRange, cudaStreamIsCapturing).
  Status EnterRuntimeCall(const char* api, bool needs_context, SourceLocation loc = SourceLocation::Current());
  // A driver API call's precondition: cuInit has succeeded in this very
  // process (CUDA_ERROR_NOT_INITIALIZED, 3, before it and in any child
  // forked after initialization).
  Status DriverReady(const char* api, SourceLocation loc = SourceLocation::Current());
  // Creates the primary context of visible device `device`
  // (cuDevicePrimaryCtxRetain; simcuda keeps no reference count).
  Status RetainPrimaryContext(int device, SourceLocation loc = SourceLocation::Current());
  // Returns the calling thread's current device without any check (the
  // driver's view of the current context); 0 until one is set.
  int CurrentDeviceUnchecked() const;
  // Returns the free and total bytes of the current device (cudaMemGetInfo).
  Result<std::pair<size_t, size_t>> MemoryInfo(SourceLocation loc = SourceLocation::Current());
  // Allocates managed memory on the current device (cudaMallocManaged):
  // device memory that pointer queries report as managed.
  Result<void*> MallocManaged(size_t bytes, SourceLocation loc = SourceLocation::Current());
  // Returns the start and size of the device allocation that contains
  // `ptr` (cuMemGetAddressRange); cudaErrorInvalidValue for other memory.
  Result<std::pair<void*, size_t>> AllocationRange(const void* ptr, SourceLocation loc = SourceLocation::Current());
  // Resets `device` as DeviceReset resets the current one
  // (cuDevicePrimaryCtxReset): its memory, streams and events go, its
  // primary context becomes inactive.
  Status ResetDevice(int device, SourceLocation loc = SourceLocation::Current());
  // Whether a runtime call made a context current on the calling thread
  // (the driver's current context when its own stack is empty), and
  // unbinding it (cuCtxPopCurrent of that context).
  bool ContextBoundUnchecked() const;
  void UnbindContext();
  // Records `code` as the calling thread's last error: a failure the
  // drop-in found before it reached the model (a bad argument).
  void RecordError(cudaError_t code);
  // Calls `observer` with the initialization site each time CUDA is
  // initialized in a process (the drop-in's per-process report). It runs
  // with the model's lock held: it must not call the model.
  using InitializationObserver = void (*)(const std::string& site);
  void SetInitializationObserver(InitializationObserver observer);

 protected:
  Result<int> DoGetDeviceCount(SourceLocation loc) override;
  Status DoSetDevice(int device, SourceLocation loc) override;
  Result<int> DoGetDevice(SourceLocation loc) override;
  Result<int> DoDriverGetVersion(SourceLocation loc) override;
  Result<int> DoRuntimeGetVersion(SourceLocation loc) override;
  Result<int> DoNvmlDeviceCount(SourceLocation loc) override;
  Status DoDriverInit(SourceLocation loc) override;
  Result<void*> DoMalloc(size_t bytes, SourceLocation loc) override;
  Result<void*> DoMallocHost(size_t bytes, SourceLocation loc) override;
  Status DoFreeHost(void* ptr, SourceLocation loc) override;
  Status DoDeviceReset(SourceLocation loc) override;
  Status DoFree(void* ptr, SourceLocation loc) override;
  Status DoMemcpy(void* dst, const void* src, size_t bytes, MemcpyKind kind, StreamHandle stream, bool async,
                  SourceLocation loc) override;
  Status DoHostRegister(void* ptr, size_t bytes, SourceLocation loc) override;
  Status DoHostUnregister(void* ptr, SourceLocation loc) override;
  Result<PointerAttributes> DoGetPointerAttributes(const void* ptr, SourceLocation loc) override;
  Result<StreamHandle> DoStreamCreate(SourceLocation loc) override;
  Status DoStreamSynchronize(StreamHandle stream, SourceLocation loc) override;
  Status DoStreamDestroy(StreamHandle stream, SourceLocation loc) override;
  Status DoDeviceSynchronize(SourceLocation loc) override;
  Result<EventHandle> DoEventCreate(SourceLocation loc) override;
  Status DoEventRecord(EventHandle event, StreamHandle stream, SourceLocation loc) override;
  Status DoEventQuery(EventHandle event, SourceLocation loc) override;
  Status DoEventSynchronize(EventHandle event, SourceLocation loc) override;
  Status DoEventDestroy(EventHandle event, SourceLocation loc) override;
  Status DoGetLastError(bool clear, SourceLocation loc) override;
  Status DoLaunch(const char* kernel, const LaunchConfig& config, const BufferUse* buffers, size_t num_buffers,
                  const std::function<void()>& host_twin, const std::function<int()>& cuda_launch,
                  SourceLocation loc) override;

 private:
  // What an API call needs before it may run. kCachedCount: answered from
  // the runtime's cache once it is initialized (cudaGetDeviceCount), so it
  // works even in a poisoned child (Note [Fork poisoning]).
  enum class Needs { kCachedCount, kDevice, kContext };

  struct Range {
    size_t bytes;
    int device;
    bool managed = false;  // cudaMallocManaged / cuMemAllocManaged: reads as cudaMemoryTypeManaged
  };

  // Allocates device memory on the current device; requires mu_ held.
  Result<void*> MallocLocked(size_t bytes, bool managed, const char* api, SourceLocation loc);
  // Drops what `device`'s primary context owned; requires mu_ held.
  void ResetDeviceLocked(int device);
  // Runs the checks every call makes, in CUDA's order: driver, fork after
  // init (initializing on first use), device presence, primary context and
  // the sticky error. Requires mu_ held.
  Status Enter(const char* api, Needs needs, SourceLocation loc);
  // Records `code` as this thread's last error and returns it as a Status.
  Status Fail(cudaError_t code, const char* api, SourceLocation loc, const std::string& detail = "");
  // Returns the range in `ranges` that contains [ptr, ptr+bytes), if any.
  static const Range* FindRange(const std::map<uintptr_t, Range>& ranges, const void* ptr, size_t bytes);
  // Checks the state before a kernel launch (init, fork, sticky error, launch
  // configuration, the stream's device) and the buffers the kernel touches.
  // Sets *run_body to false when a buffer is neither the current device's
  // memory nor pinned memory: that raises the sticky cudaErrorIllegalAddress,
  // reported by the next synchronizing call.
  Status BeginKernel(const char* kernel, const LaunchConfig& config, const BufferUse* buffers, size_t num_buffers,
                     SourceLocation loc, bool* run_body);
  // Returns whether `handle` is a live stream (nullptr, the default stream, is).
  bool KnownStream(StreamHandle handle) const;
  // Fails with cudaErrorInvalidResourceHandle unless `event` is a live event.
  Status CheckEvent(const char* api, EventHandle event, SourceLocation loc);
  std::string ForkDetail();
  // Fails call `api` with the configuration's error (cudaErrorInvalidValue),
  // printing it on stderr the first time. Requires mu_ held.
  Status ConfigurationFailure(const char* api, SourceLocation loc);
  // Initializes the driver in this process: applies CUDA_VISIBLE_DEVICES and
  // records where. Requires mu_ held.
  void InitializeDriverLocked();
  // cuInit: initializes the driver unless there is none, it is the stub, or
  // this process was forked after initialization (3). Requires mu_ held.
  Status DriverInitLocked(SourceLocation loc);
  std::string InitializationSiteLocked();
  // Resolves the recorded stacks into InitializationSite's text.
  static std::string ResolveInitializationSite();

  std::mutex mu_;
  // cudaSuccess when a driver is present, else the error every call returns:
  // cudaErrorInsufficientDriver (none) or cudaErrorStubLibrary (stub).
  cudaError_t driver_error_ = cudaSuccess;
  int physical_devices_ = 1;
  int device_count_ = 1;  // visible devices: CUDA_VISIBLE_DEVICES applied at initialization
  // What initialization found: cudaSuccess, cudaErrorNoDevice (nothing
  // visible) or cudaErrorInvalidDevice (CUDA_VISIBLE_DEVICES named a device
  // twice). Every call, and every read of the last error, returns it.
  cudaError_t init_error_ = cudaSuccess;
  size_t capacity_bytes_ = size_t{16} << 30;

  bool initialized_ = false;  // the driver is initialized (cuInit, or any runtime call)
  // The calls that only need CUDA initialized (cudaGetDevice, the count,
  // the driver's precondition) answer without the lock once this is set:
  // the runtime initialized without error in this very process. A forked
  // child starts with it clear. PyTorch asks cudaGetDevice ~16 times a copy.
  std::atomic<bool> ready_{false};
  pid_t current_pid_ = 0;             // this process's pid, renewed in a forked child (getpid() is a system call)
  bool runtime_initialized_ = false;  // the runtime too: it has cached the device count
  pid_t init_pid_ = 0;
  // Set in a child forked after only cuInit: the runtime's own initialization
  // failed with 3, and every later read of the last error says so.
  bool runtime_init_failed_ = false;
  std::vector<void*> init_frames_;  // raw return addresses, resolved on demand
  InitializationObserver init_observer_ = nullptr;
  std::string config_error_;  // a malformed FAULTLINE_SIMCUDA_* variable (simulated_machine.h)
  bool config_error_said_ = false;
  std::string device_name_;
  int compute_major_ = 0;
  int compute_minor_ = 0;
  std::vector<int> visible_physical_;  // visible device -> physical ordinal
  std::vector<bool> primary_context_;
  std::vector<size_t> used_bytes_;
  // A sticky error (cudaErrorIllegalAddress after a faulting kernel): once
  // set, every call that needs the context fails with it (and sets it as
  // the last error again) until the process ends; cudaGetLastError clears
  // only the slot. cudaDeviceReset does not clear it: a reset of the
  // device that faulted turns it into cudaErrorDevicesUnavailable (46), as
  // seen on an H100. (One error for the process: simcuda does not keep a
  // broken context per device.)
  cudaError_t sticky_error_ = cudaSuccess;
  int sticky_device_ = -1;  // the device whose kernel faulted

  std::map<uintptr_t, Range> device_allocations_;
  std::map<uintptr_t, Range> registered_host_;
  std::map<uintptr_t, Range> pinned_allocations_;  // cudaMallocHost
  std::map<StreamHandle, int> streams_;            // stream -> device
  std::map<EventHandle, int> events_;              // event -> device
};

// Returns the process-wide simcuda runtime.
SimCudaRuntime& SimCuda();

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_RUNTIME_SIMCUDA_RUNTIME_H_
