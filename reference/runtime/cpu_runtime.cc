// Implements the cpu backend: a host-only runtime with no devices. Device
// operations fail with kUnavailable naming the runtime; host memory is never
// pinned.
#include <cstring>

#include "reference/runtime/backends.h"

namespace faultline {
namespace {

class CpuRuntime final : public DeviceRuntime {
 public:
  RuntimeKind kind() const override { return RuntimeKind::kCpu; }
  Result<bool> PrimaryContextActive(int) override { return false; }

 protected:
  Result<int> DoGetDeviceCount(SourceLocation) override { return 0; }
  Status DoSetDevice(int device, SourceLocation) override { return NoDevice("SetDevice"); }
  Result<int> DoGetDevice(SourceLocation) override { return NoDevice("GetDevice"); }
  Result<int> DoDriverGetVersion(SourceLocation) override { return 0; }
  Result<int> DoRuntimeGetVersion(SourceLocation) override { return NoDevice("RuntimeGetVersion"); }
  Result<int> DoNvmlDeviceCount(SourceLocation) override { return 0; }
  Status DoDriverInit(SourceLocation) override { return NoDevice("DriverInit"); }
  Result<void*> DoMalloc(size_t, SourceLocation) override { return NoDevice("Malloc"); }
  Result<void*> DoMallocHost(size_t, SourceLocation) override { return NoDevice("MallocHost"); }
  Status DoFreeHost(void* ptr, SourceLocation) override { return ptr == nullptr ? OkStatus() : NoDevice("FreeHost"); }
  Status DoDeviceReset(SourceLocation) override { return NoDevice("DeviceReset"); }
  Status DoFree(void* ptr, SourceLocation) override { return ptr == nullptr ? OkStatus() : NoDevice("Free"); }
  Status DoMemcpy(void* dst, const void* src, size_t bytes, MemcpyKind kind, StreamHandle, bool,
                  SourceLocation) override {
    if (kind != MemcpyKind::kHostToHost) return NoDevice("Memcpy");
    std::memmove(dst, src, bytes);
    return OkStatus();
  }
  Status DoHostRegister(void*, size_t, SourceLocation) override { return NoDevice("HostRegister"); }
  Status DoHostUnregister(void*, SourceLocation) override { return NoDevice("HostUnregister"); }
  Result<PointerAttributes> DoGetPointerAttributes(const void*, SourceLocation) override {
    return PointerAttributes{MemoryType::kUnregistered, -1};
  }
  Result<StreamHandle> DoStreamCreate(SourceLocation) override { return NoDevice("StreamCreate"); }
  Status DoStreamSynchronize(StreamHandle, SourceLocation) override { return OkStatus(); }
  Status DoStreamDestroy(StreamHandle, SourceLocation) override { return NoDevice("StreamDestroy"); }
  Status DoDeviceSynchronize(SourceLocation) override { return OkStatus(); }
  Result<EventHandle> DoEventCreate(SourceLocation) override { return NoDevice("EventCreate"); }
  Status DoEventRecord(EventHandle, StreamHandle, SourceLocation) override { return NoDevice("EventRecord"); }
  Status DoEventQuery(EventHandle, SourceLocation) override { return NoDevice("EventQuery"); }
  Status DoEventSynchronize(EventHandle, SourceLocation) override { return NoDevice("EventSynchronize"); }
  Status DoEventDestroy(EventHandle, SourceLocation) override { return NoDevice("EventDestroy"); }
  Status DoGetLastError(bool, SourceLocation) override { return OkStatus(); }
  Status DoLaunch(const char* kernel, const LaunchConfig&, const BufferUse*, size_t, const std::function<void()>&,
                  const std::function<int()>&, SourceLocation) override {
    return UnavailableError(std::string("kernel ") + kernel +
                            ": the cpu runtime cannot launch kernels; use --runtime=simcuda or --runtime=cuda");
  }

 private:
  static Status NoDevice(const char* api) {
    return UnavailableError(std::string(api) +
                            ": the cpu runtime has no device; use --runtime=simcuda or --runtime=cuda");
  }
};

}  // namespace

DeviceRuntime& CpuRuntimeInstance() {
  static auto* runtime = new CpuRuntime();
  return *runtime;
}

}  // namespace faultline
