// Provides DeviceRuntime: one interface over three backends chosen at run time
// (cpu, simcuda, cuda), modelled on DGL's DeviceAPI and PyTorch's CUDA hooks.
// Argument checks live in the non-virtual public methods so every backend
// rejects bad arguments the same way, before any CUDA state is touched.
#ifndef FAULTLINE_REFERENCE_RUNTIME_RUNTIME_H_
#define FAULTLINE_REFERENCE_RUNTIME_RUNTIME_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "reference/base/status.h"
#include "reference/runtime/launch_config.h"

namespace faultline {

// The call site of a runtime call, captured through default arguments.
struct SourceLocation {
  const char* file;
  int line;
  static constexpr SourceLocation Current(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
    return SourceLocation{file, line};
  }
};

enum class RuntimeKind { kCpu, kSimCuda, kCuda };

// Returns "cpu", "simcuda" or "cuda".
const char* RuntimeKindName(RuntimeKind kind);

// Parses "cpu", "simcuda", "cuda" or "auto" (cuda when a GPU is usable,
// else simcuda). `what` names the flag or variable in the error.
Result<RuntimeKind> ParseRuntimeKind(std::string_view text, std::string_view what = "--runtime");

// Reads FAULTLINE_RUNTIME (default "auto").
Result<RuntimeKind> RuntimeKindFromEnv();

// Same values as cudaMemcpyKind.
enum class MemcpyKind { kHostToHost = 0, kHostToDevice = 1, kDeviceToHost = 2, kDeviceToDevice = 3 };

// Same values as cudaMemoryType.
enum class MemoryType { kUnregistered = 0, kHost = 1, kDevice = 2, kManaged = 3 };

struct PointerAttributes {
  MemoryType type = MemoryType::kUnregistered;
  int device = -1;  // the owning device for device and registered host memory
};

using StreamHandle = void*;  // nullptr is the default stream
using EventHandle = void*;

// The CUDA runtime version faultline is built against (CUDART_VERSION, e.g.
// 13000 for CUDA 13.0); simcuda reports it too.
int BuiltRuntimeVersion();

// Largest single allocation or registration accepted; larger sizes are
// almost always a negative number that was cast to size_t.
inline constexpr size_t kMaxBytes = size_t{1} << 46;

class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;

  virtual RuntimeKind kind() const = 0;
  const char* name() const { return RuntimeKindName(kind()); }

  // Returns the number of usable devices; 0 when there is no driver, no
  // device, or the call fails. Never throws and never returns an error.
  int DeviceCount(SourceLocation loc = SourceLocation::Current());
  // Returns the device count or the runtime's error (cudaGetDeviceCount).
  Result<int> GetDeviceCount(SourceLocation loc = SourceLocation::Current());

  // Makes `device` the calling thread's current device (cudaSetDevice);
  // since CUDA 12 this creates its primary context.
  Status SetDevice(int device, SourceLocation loc = SourceLocation::Current());
  // Returns the calling thread's current device (cudaGetDevice; default 0).
  // Initializes CUDA but creates no context.
  Result<int> GetDevice(SourceLocation loc = SourceLocation::Current());

  // Returns the driver's CUDA version (cudaDriverGetVersion): 0, and no
  // error, when no driver is installed.
  Result<int> DriverGetVersion(SourceLocation loc = SourceLocation::Current());
  // Returns the runtime's CUDA version (cudaRuntimeGetVersion); needs no driver.
  Result<int> RuntimeGetVersion(SourceLocation loc = SourceLocation::Current());
  // Returns the number of devices visible under the CUDA_VISIBLE_DEVICES of
  // the moment, asked through NVML (nvmlDeviceGetCount), which does not
  // initialize CUDA: a process may fork working children afterwards (PyTorch's
  // PYTORCH_NVML_BASED_CUDA_CHECK). Unavailable without a driver.
  Result<int> NvmlDeviceCount(SourceLocation loc = SourceLocation::Current());
  // Initializes the driver alone (cuInit(0)), the probe GPU libraries make
  // at import (Triton's is_active()). The runtime caches nothing, so a child
  // forked afterwards fails every call, cudaGetDeviceCount included; in a
  // child forked after any initialization it fails with
  // CUDA_ERROR_NOT_INITIALIZED (3). See Note [Fork poisoning]. Unavailable
  // without a driver library.
  Status DriverInit(SourceLocation loc = SourceLocation::Current());

  // Allocates device memory on the current device; bytes must be in (0, kMaxBytes].
  Result<void*> Malloc(size_t bytes, SourceLocation loc = SourceLocation::Current());
  // Frees device memory. Free(nullptr) succeeds and, as cudaFree(0) does,
  // creates the primary context.
  Status Free(void* ptr, SourceLocation loc = SourceLocation::Current());

  // Allocates page-locked host memory (cudaMallocHost; cudaHostAlloc with
  // the default flags): creates the primary context of the current device;
  // the memory reads as cudaMemoryTypeHost. bytes must be in (0, kMaxBytes].
  Result<void*> MallocHost(size_t bytes, SourceLocation loc = SourceLocation::Current());
  // Frees memory from MallocHost (cudaFreeHost); FreeHost(nullptr) succeeds.
  Status FreeHost(void* ptr, SourceLocation loc = SourceLocation::Current());

  // Destroys the current device's primary context and everything allocated
  // in it (cudaDeviceReset). The process stays initialized: a child forked
  // afterwards is still poisoned (see Note [Fork poisoning]).
  Status DeviceReset(SourceLocation loc = SourceLocation::Current());

  // Copies `bytes` bytes (cudaMemcpy); a zero-byte copy is a no-op. Waits
  // for the copy and for earlier work on the default stream.
  Status Memcpy(void* dst, const void* src, size_t bytes, MemcpyKind kind,
                SourceLocation loc = SourceLocation::Current());
  // Queues a copy on `stream` (cudaMemcpyAsync); pageable host memory is
  // allowed (the driver stages it).
  Status MemcpyAsync(void* dst, const void* src, size_t bytes, MemcpyKind kind, StreamHandle stream,
                     SourceLocation loc = SourceLocation::Current());

  // Page-locks (pins) a host range and maps it for the devices
  // (cudaHostRegister). See Note [Pin ownership per process] in
  // reference/tensor/tensor.cc: only this process can unpin it.
  Status HostRegister(void* ptr, size_t bytes, SourceLocation loc = SourceLocation::Current());
  // Unpins a range pinned by this process (cudaHostUnregister).
  Status HostUnregister(void* ptr, SourceLocation loc = SourceLocation::Current());
  Result<PointerAttributes> GetPointerAttributes(const void* ptr, SourceLocation loc = SourceLocation::Current());
  // Returns whether ptr is registered (pinned) host memory.
  Result<bool> IsPinned(const void* ptr, SourceLocation loc = SourceLocation::Current());

  // Streams (cudaStreamCreate / Synchronize / Destroy); nullptr is the
  // default stream. simcuda answers a destroyed or unknown handle with
  // cudaErrorInvalidResourceHandle (400); real CUDA leaves it undefined.
  Result<StreamHandle> StreamCreate(SourceLocation loc = SourceLocation::Current());
  Status StreamSynchronize(StreamHandle stream, SourceLocation loc = SourceLocation::Current());
  Status StreamDestroy(StreamHandle stream, SourceLocation loc = SourceLocation::Current());
  // Waits for all work on the current device (cudaDeviceSynchronize); where
  // an earlier kernel faulted, this is where its error appears.
  Status DeviceSynchronize(SourceLocation loc = SourceLocation::Current());

  // Events (cudaEventCreate / Record / Query / Synchronize / Destroy).
  // EventQuery is OK once the work before the record has finished, or when
  // the event was never recorded; cudaErrorNotReady (600) while it runs.
  Result<EventHandle> EventCreate(SourceLocation loc = SourceLocation::Current());
  Status EventRecord(EventHandle event, StreamHandle stream, SourceLocation loc = SourceLocation::Current());
  Status EventQuery(EventHandle event, SourceLocation loc = SourceLocation::Current());
  Status EventSynchronize(EventHandle event, SourceLocation loc = SourceLocation::Current());
  Status EventDestroy(EventHandle event, SourceLocation loc = SourceLocation::Current());

  // Launches kernel `kernel` (see kernels/launch.h, which builds the two
  // callables from one functor): `buffers` lists every range the kernel
  // touches. simcuda checks the launch and each buffer like the GPU's MMU,
  // then runs `host_twin`; a buffer outside the current device's memory and
  // pinned memory raises the sticky 700 instead. cuda calls `cuda_launch`, which returns the launch's
  // cudaError_t. The cpu runtime refuses by name.
  Status Launch(const char* kernel, const LaunchConfig& config, const BufferUse* buffers, size_t num_buffers,
                const std::function<void()>& host_twin, const std::function<int()>& cuda_launch,
                SourceLocation loc = SourceLocation::Current());

  // Returns and clears this thread's last error (cudaGetLastError). After a
  // faulting kernel the slot clears but the context stays broken: every
  // later call that uses it fails with 700 again (seen on an H100,
  // docs/gpu-validation.md). Without a usable driver (35 / 34), or in a child
  // forked after only the driver was initialized (3), initialization itself
  // failed and is reported by every read: those are never cleared.
  Status GetLastError(SourceLocation loc = SourceLocation::Current());
  // Returns this thread's last error without clearing it.
  Status PeekAtLastError(SourceLocation loc = SourceLocation::Current());

  // Returns whether the primary context of `device` is active
  // (cuDevicePrimaryCtxGetState). Used by the conformance test and repros.
  virtual Result<bool> PrimaryContextActive(int device) = 0;

  // Returns how many successful calls so far made the host wait until the
  // device had finished the copy or the work before it, by CUDA's documented
  // rules ("API synchronization behavior", docs/simcuda.md): Memcpy between
  // host and device memory (not device to device), and stream, device and
  // event synchronization. Each is a host round trip on a GPU; counted the
  // same on every backend, so simcuda shows a GPU run's round trips.
  // MemcpyAsync is never counted, although into pageable host memory it
  // waits too: telling pageable from pinned memory would cost a query per
  // copy. A caller that reads back that way follows with StreamSynchronize.
  uint64_t host_waits() const { return host_waits_.load(std::memory_order_relaxed); }
  // Returns the nanoseconds (steady clock) those counted waits took: on a
  // GPU, the time the host sat idle while the device worked. With the
  // whole time of a call, it tells who sets the pace: a call whose time
  // goes to waiting is bound by the device; one whose time goes to issuing
  // its launches is bound by the host, and capturing them in a CUDA graph
  // could shorten it. simcuda runs a kernel at its launch, so its waits
  // take only a synchronous copy's own time: there the split says nothing.
  uint64_t host_wait_ns() const { return host_wait_ns_.load(std::memory_order_relaxed); }
  // Returns the bytes that successful Memcpy and MemcpyAsync calls of kind
  // kDeviceToHost have copied so far: what a caller read back, counted on
  // every backend alike.
  uint64_t bytes_to_host() const { return bytes_to_host_.load(std::memory_order_relaxed); }
  // Returns how many successful Launch calls there have been so far: one
  // per kernel of the project's, one per prefix sum (kernels/scan.h; CUB
  // may start more than one kernel for it). Each costs the host a launch
  // and the device a kernel's start, so a device benchmark reports it
  // beside host_waits.
  uint64_t launches() const { return launches_.load(std::memory_order_relaxed); }
  // Returns how many successful Malloc and Free calls of device memory there
  // have been so far (Free of null, a no-op, is not counted). Each makes a
  // GPU "synchronize across all executing CUDA streams" (CUDA Programming
  // Guide, "Stream-Ordered Memory Allocator"), so a device benchmark
  // reports them beside host_waits: a steady state should make none.
  uint64_t device_alloc_calls() const { return device_alloc_calls_.load(std::memory_order_relaxed); }

 protected:
  virtual Result<int> DoGetDeviceCount(SourceLocation loc) = 0;
  virtual Status DoSetDevice(int device, SourceLocation loc) = 0;
  virtual Result<int> DoGetDevice(SourceLocation loc) = 0;
  virtual Result<int> DoDriverGetVersion(SourceLocation loc) = 0;
  virtual Result<int> DoRuntimeGetVersion(SourceLocation loc) = 0;
  virtual Result<int> DoNvmlDeviceCount(SourceLocation loc) = 0;
  virtual Status DoDriverInit(SourceLocation loc) = 0;
  virtual Result<void*> DoMalloc(size_t bytes, SourceLocation loc) = 0;
  virtual Result<void*> DoMallocHost(size_t bytes, SourceLocation loc) = 0;
  virtual Status DoFreeHost(void* ptr, SourceLocation loc) = 0;
  virtual Status DoDeviceReset(SourceLocation loc) = 0;
  virtual Status DoFree(void* ptr, SourceLocation loc) = 0;
  virtual Status DoMemcpy(void* dst, const void* src, size_t bytes, MemcpyKind kind, StreamHandle stream, bool async,
                          SourceLocation loc) = 0;
  virtual Status DoHostRegister(void* ptr, size_t bytes, SourceLocation loc) = 0;
  virtual Status DoHostUnregister(void* ptr, SourceLocation loc) = 0;
  virtual Result<PointerAttributes> DoGetPointerAttributes(const void* ptr, SourceLocation loc) = 0;
  virtual Result<StreamHandle> DoStreamCreate(SourceLocation loc) = 0;
  virtual Status DoStreamSynchronize(StreamHandle stream, SourceLocation loc) = 0;
  virtual Status DoStreamDestroy(StreamHandle stream, SourceLocation loc) = 0;
  virtual Status DoDeviceSynchronize(SourceLocation loc) = 0;
  virtual Result<EventHandle> DoEventCreate(SourceLocation loc) = 0;
  virtual Status DoEventRecord(EventHandle event, StreamHandle stream, SourceLocation loc) = 0;
  virtual Status DoEventQuery(EventHandle event, SourceLocation loc) = 0;
  virtual Status DoEventSynchronize(EventHandle event, SourceLocation loc) = 0;
  virtual Status DoEventDestroy(EventHandle event, SourceLocation loc) = 0;
  virtual Status DoGetLastError(bool clear, SourceLocation loc) = 0;
  virtual Status DoLaunch(const char* kernel, const LaunchConfig& config, const BufferUse* buffers, size_t num_buffers,
                          const std::function<void()>& host_twin, const std::function<int()>& cuda_launch,
                          SourceLocation loc) = 0;

 private:
  // Runs `wait`, a call that makes the host wait; counts it and its time
  // when it returns OK.
  Status CountedWait(const std::function<Status()>& wait);

  // Counts `status`'s copy of `bytes` to the host when it is OK; returns it.
  Status CountedCopy(Status status, MemcpyKind kind, size_t bytes);

  std::atomic<uint64_t> host_waits_{0};
  std::atomic<uint64_t> host_wait_ns_{0};
  std::atomic<uint64_t> bytes_to_host_{0};
  std::atomic<uint64_t> launches_{0};
  std::atomic<uint64_t> device_alloc_calls_{0};
};

// Returns the process-wide runtime of `kind` (never null; backends are
// created on first use and live until exit).
DeviceRuntime& GetRuntime(RuntimeKind kind);

// Returns the device count of `kind`, or the error its runtime gives
// (cudaErrorInsufficientDriver without a driver, cudaErrorNoDevice without a
// device, ...), without initializing CUDA in this process: a forked child
// asks unless this process has already initialized that backend.
Result<int> ProbeDeviceCount(RuntimeKind kind);

// Restores the current device on scope exit (like c10::cuda::CUDAGuard).
class DeviceGuard {
 public:
  DeviceGuard(DeviceRuntime& runtime, int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  // Returns the status of switching to the requested device.
  const Status& status() const { return status_; }

 private:
  DeviceRuntime& runtime_;
  int previous_ = -1;
  Status status_;
};

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_RUNTIME_RUNTIME_H_
