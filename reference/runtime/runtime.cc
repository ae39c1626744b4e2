// Implements the argument checks shared by every backend and DeviceGuard.
#include "reference/runtime/runtime.h"

#include <cuda_runtime_api.h>  // CUDART_VERSION only

#include <chrono>
#include <cstdlib>
#include <sstream>

#include "reference/runtime/backends.h"

namespace faultline {
namespace {

Status NullArgument(const char* api, const char* arg) {
  return InvalidArgumentError(std::string(api) + ": argument '" + arg + "' is null; expected a valid pointer");
}

Status BadSize(const char* api, size_t bytes) {
  return InvalidArgumentError(std::string(api) + ": argument 'bytes' is " + std::to_string(bytes) +
                              "; expected 0 < bytes <= " + std::to_string(kMaxBytes) +
                              " (a negative size cast to size_t looks like this)");
}

}  // namespace

int BuiltRuntimeVersion() { return CUDART_VERSION; }

const char* RuntimeKindName(RuntimeKind kind) {
  switch (kind) {
    case RuntimeKind::kCpu: return "cpu";
    case RuntimeKind::kSimCuda: return "simcuda";
    case RuntimeKind::kCuda: return "cuda";
  }
  return "unknown";
}

int DeviceRuntime::DeviceCount(SourceLocation loc) {
  Result<int> count = DoGetDeviceCount(loc);
  return count.ok() ? *count : 0;
}

Result<int> DeviceRuntime::GetDeviceCount(SourceLocation loc) { return DoGetDeviceCount(loc); }

Status DeviceRuntime::SetDevice(int device, SourceLocation loc) { return DoSetDevice(device, loc); }

Result<int> DeviceRuntime::GetDevice(SourceLocation loc) { return DoGetDevice(loc); }

Result<int> DeviceRuntime::DriverGetVersion(SourceLocation loc) { return DoDriverGetVersion(loc); }

Result<int> DeviceRuntime::RuntimeGetVersion(SourceLocation loc) { return DoRuntimeGetVersion(loc); }

Result<int> DeviceRuntime::NvmlDeviceCount(SourceLocation loc) { return DoNvmlDeviceCount(loc); }

Status DeviceRuntime::DriverInit(SourceLocation loc) { return DoDriverInit(loc); }

Result<void*> DeviceRuntime::MallocHost(size_t bytes, SourceLocation loc) {
  if (bytes == 0 || bytes > kMaxBytes) return BadSize("MallocHost", bytes);
  return DoMallocHost(bytes, loc);
}

Status DeviceRuntime::FreeHost(void* ptr, SourceLocation loc) { return DoFreeHost(ptr, loc); }

Status DeviceRuntime::DeviceReset(SourceLocation loc) { return DoDeviceReset(loc); }

Result<void*> DeviceRuntime::Malloc(size_t bytes, SourceLocation loc) {
  if (bytes == 0 || bytes > kMaxBytes) return BadSize("Malloc", bytes);
  Result<void*> allocated = DoMalloc(bytes, loc);
  if (allocated.ok()) device_alloc_calls_.fetch_add(1, std::memory_order_relaxed);
  return allocated;
}

Status DeviceRuntime::Free(void* ptr, SourceLocation loc) {
  Status freed = DoFree(ptr, loc);
  if (freed.ok() && ptr != nullptr) device_alloc_calls_.fetch_add(1, std::memory_order_relaxed);
  return freed;
}

Status DeviceRuntime::Memcpy(void* dst, const void* src, size_t bytes, MemcpyKind kind, SourceLocation loc) {
  if (bytes == 0) return OkStatus();
  if (dst == nullptr) return NullArgument("Memcpy", "dst");
  if (src == nullptr) return NullArgument("Memcpy", "src");
  const bool host_and_device = kind == MemcpyKind::kHostToDevice || kind == MemcpyKind::kDeviceToHost;
  auto copy = [&] { return CountedCopy(DoMemcpy(dst, src, bytes, kind, nullptr, /*async=*/false, loc), kind, bytes); };
  return host_and_device ? CountedWait(copy) : copy();
}

Status DeviceRuntime::MemcpyAsync(void* dst, const void* src, size_t bytes, MemcpyKind kind, StreamHandle stream,
                                  SourceLocation loc) {
  if (bytes == 0) return OkStatus();
  if (dst == nullptr) return NullArgument("MemcpyAsync", "dst");
  if (src == nullptr) return NullArgument("MemcpyAsync", "src");
  return CountedCopy(DoMemcpy(dst, src, bytes, kind, stream, /*async=*/true, loc), kind, bytes);
}

Status DeviceRuntime::HostRegister(void* ptr, size_t bytes, SourceLocation loc) {
  if (ptr == nullptr) return NullArgument("HostRegister", "ptr");
  if (bytes == 0 || bytes > kMaxBytes) return BadSize("HostRegister", bytes);
  return DoHostRegister(ptr, bytes, loc);
}

Status DeviceRuntime::HostUnregister(void* ptr, SourceLocation loc) {
  if (ptr == nullptr) return NullArgument("HostUnregister", "ptr");
  return DoHostUnregister(ptr, loc);
}

Result<PointerAttributes> DeviceRuntime::GetPointerAttributes(const void* ptr, SourceLocation loc) {
  if (ptr == nullptr) return NullArgument("GetPointerAttributes", "ptr");
  return DoGetPointerAttributes(ptr, loc);
}

Result<bool> DeviceRuntime::IsPinned(const void* ptr, SourceLocation loc) {
  FL_ASSIGN_OR_RETURN(PointerAttributes attrs, GetPointerAttributes(ptr, loc));
  return attrs.type == MemoryType::kHost;
}

Result<StreamHandle> DeviceRuntime::StreamCreate(SourceLocation loc) { return DoStreamCreate(loc); }

Status DeviceRuntime::StreamSynchronize(StreamHandle stream, SourceLocation loc) {
  return CountedWait([&] { return DoStreamSynchronize(stream, loc); });
}

Status DeviceRuntime::StreamDestroy(StreamHandle stream, SourceLocation loc) {
  if (stream == nullptr) return NullArgument("StreamDestroy", "stream");
  return DoStreamDestroy(stream, loc);
}

Status DeviceRuntime::DeviceSynchronize(SourceLocation loc) {
  return CountedWait([&] { return DoDeviceSynchronize(loc); });
}

Result<EventHandle> DeviceRuntime::EventCreate(SourceLocation loc) { return DoEventCreate(loc); }

Status DeviceRuntime::EventRecord(EventHandle event, StreamHandle stream, SourceLocation loc) {
  if (event == nullptr) return NullArgument("EventRecord", "event");
  return DoEventRecord(event, stream, loc);
}

Status DeviceRuntime::EventQuery(EventHandle event, SourceLocation loc) {
  if (event == nullptr) return NullArgument("EventQuery", "event");
  return DoEventQuery(event, loc);
}

Status DeviceRuntime::EventSynchronize(EventHandle event, SourceLocation loc) {
  if (event == nullptr) return NullArgument("EventSynchronize", "event");
  return CountedWait([&] { return DoEventSynchronize(event, loc); });
}

Status DeviceRuntime::CountedCopy(Status status, MemcpyKind kind, size_t bytes) {
  if (status.ok() && kind == MemcpyKind::kDeviceToHost) bytes_to_host_.fetch_add(bytes, std::memory_order_relaxed);
  return status;
}

Status DeviceRuntime::CountedWait(const std::function<Status()>& wait) {
  const auto start = std::chrono::steady_clock::now();
  Status status = wait();
  if (status.ok()) {
    const auto took = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
    host_waits_.fetch_add(1, std::memory_order_relaxed);
    host_wait_ns_.fetch_add(static_cast<uint64_t>(took.count()), std::memory_order_relaxed);
  }
  return status;
}

Status DeviceRuntime::EventDestroy(EventHandle event, SourceLocation loc) {
  if (event == nullptr) return NullArgument("EventDestroy", "event");
  return DoEventDestroy(event, loc);
}

Status DeviceRuntime::Launch(const char* kernel, const LaunchConfig& config, const BufferUse* buffers,
                             size_t num_buffers, const std::function<void()>& host_twin,
                             const std::function<int()>& cuda_launch, SourceLocation loc) {
  if (num_buffers > 0 && buffers == nullptr) return NullArgument("Launch", "buffers");
  Status launched = DoLaunch(kernel, config, buffers, num_buffers, host_twin, cuda_launch, loc);
  if (launched.ok()) launches_.fetch_add(1, std::memory_order_relaxed);
  return launched;
}

Status DeviceRuntime::GetLastError(SourceLocation loc) { return DoGetLastError(/*clear=*/true, loc); }

Status DeviceRuntime::PeekAtLastError(SourceLocation loc) { return DoGetLastError(/*clear=*/false, loc); }

DeviceGuard::DeviceGuard(DeviceRuntime& runtime, int device) : runtime_(runtime) {
  Result<int> current = runtime_.GetDevice();
  if (!current.ok()) {
    status_ = current.status();
    return;
  }
  previous_ = *current;
  status_ = runtime_.SetDevice(device);
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) (void)runtime_.SetDevice(previous_);
}

std::string PointerText(const void* p) {
  std::ostringstream os;
  os << p;
  return os.str();
}

}  // namespace faultline
