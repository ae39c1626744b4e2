// Implements the cuda backend over the real CUDA runtime (libcudart). Without
// a driver or a device every call returns the runtime's own error, and
// DeviceCount() is 0.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include "reference/runtime/backends.h"
#include "reference/runtime/cuda_errors.h"
#include "reference/runtime/simcuda_runtime.h"
#include "reference/runtime/visible_devices.h"

namespace faultline {
namespace {

// Set once this process has made a CUDA runtime call through this backend.
std::atomic<bool> g_touched_cuda{false};

// Converts a cudaError_t returned by libcudart into a Status (OK for
// cudaSuccess), keeping name, code, string, the API call and file:line.
// Only this backend calls libcudart, so it is private to this file.
Status CudaStatus(int code, const char* api, SourceLocation loc, const std::string& detail = "") {
  if (code == cudaSuccess) return OkStatus();
  auto err = static_cast<cudaError_t>(code);
  return CudaCallError(code, cudaGetErrorName(err), cudaGetErrorString(err), api, loc, detail);
}

#define FL_CUDA_CALL(api, expr, loc)                                  \
  do {                                                                \
    g_touched_cuda = true;                                            \
    cudaError_t _fl_err = (expr);                                     \
    if (_fl_err != cudaSuccess) return CudaStatus(_fl_err, api, loc); \
  } while (0)

class CudaRuntime final : public DeviceRuntime {
 public:
  RuntimeKind kind() const override { return RuntimeKind::kCuda; }

  // Asks the driver (cuDevicePrimaryCtxGetState); initializes the driver.
  Result<bool> PrimaryContextActive(int device) override {
    using InitFn = int (*)(unsigned);
    using GetFn = int (*)(int, unsigned*, int*);
    void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (driver == nullptr) return UnavailableError("PrimaryContextActive: libcuda.so.1 not found (no driver)");
    auto init = reinterpret_cast<InitFn>(dlsym(driver, "cuInit"));
    auto get = reinterpret_cast<GetFn>(dlsym(driver, "cuDevicePrimaryCtxGetState"));
    if (init == nullptr || get == nullptr) return UnavailableError("PrimaryContextActive: driver lacks symbols");
    if (int rc = init(0); rc != 0)
      return UnavailableError("PrimaryContextActive: cuInit returned " + std::to_string(rc));
    unsigned flags = 0;
    int active = 0;
    if (int rc = get(device, &flags, &active); rc != 0) {
      return InvalidArgumentError("PrimaryContextActive: cuDevicePrimaryCtxGetState(" + std::to_string(device) +
                                  ") returned " + std::to_string(rc));
    }
    return active != 0;
  }

 protected:
  Result<int> DoGetDeviceCount(SourceLocation loc) override {
    int count = 0;
    FL_CUDA_CALL("cudaGetDeviceCount", cudaGetDeviceCount(&count), loc);
    return count;
  }
  Status DoSetDevice(int device, SourceLocation loc) override {
    FL_CUDA_CALL("cudaSetDevice", cudaSetDevice(device), loc);
    return OkStatus();
  }
  Result<int> DoGetDevice(SourceLocation loc) override {
    int device = -1;
    FL_CUDA_CALL("cudaGetDevice", cudaGetDevice(&device), loc);
    return device;
  }
  Result<int> DoDriverGetVersion(SourceLocation loc) override {
    int version = 0;
    FL_CUDA_CALL("cudaDriverGetVersion", cudaDriverGetVersion(&version), loc);
    return version;
  }
  Result<int> DoRuntimeGetVersion(SourceLocation loc) override {
    int version = 0;
    FL_CUDA_CALL("cudaRuntimeGetVersion", cudaRuntimeGetVersion(&version), loc);
    return version;
  }
  // Asks NVML (libnvidia-ml.so.1, loaded on demand: it ships with the driver)
  // and applies CUDA_VISIBLE_DEVICES the way the driver would
  // (visible_devices.h).
  Result<int> DoNvmlDeviceCount(SourceLocation) override {
    using InitFn = int (*)();
    using CountFn = int (*)(unsigned*);
    using HandleFn = int (*)(unsigned, void**);
    using UuidFn = int (*)(void*, char*, unsigned);
    void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (nvml == nullptr) return UnavailableError("nvmlInit: libnvidia-ml.so.1 not found (no NVIDIA driver)");
    auto init = reinterpret_cast<InitFn>(dlsym(nvml, "nvmlInit_v2"));
    auto count = reinterpret_cast<CountFn>(dlsym(nvml, "nvmlDeviceGetCount_v2"));
    auto handle = reinterpret_cast<HandleFn>(dlsym(nvml, "nvmlDeviceGetHandleByIndex_v2"));
    auto uuid = reinterpret_cast<UuidFn>(dlsym(nvml, "nvmlDeviceGetUUID"));
    if (init == nullptr || count == nullptr || handle == nullptr || uuid == nullptr) {
      return UnavailableError("NVML: libnvidia-ml.so.1 lacks nvmlInit_v2 / nvmlDeviceGetCount_v2");
    }
    if (int rc = init(); rc != 0) return UnavailableError("nvmlInit_v2 returned " + std::to_string(rc));
    unsigned physical = 0;
    if (int rc = count(&physical); rc != 0)
      return UnavailableError("nvmlDeviceGetCount_v2 returned " + std::to_string(rc));
    const char* mask = std::getenv("CUDA_VISIBLE_DEVICES");
    if (mask == nullptr) return static_cast<int>(physical);
    std::vector<std::string> uuids;
    for (unsigned i = 0; i < physical; ++i) {
      void* device = nullptr;
      char text[96] = {};
      uuids.push_back(handle(i, &device) == 0 && uuid(device, text, sizeof(text)) == 0 ? text : "");
    }
    return CountVisibleDevices(mask, uuids);
  }
  // cuInit(0) from the driver library, loaded on demand: the binary must
  // also start on machines without a driver.
  Status DoDriverInit(SourceLocation loc) override {
    using InitFn = int (*)(unsigned);
    using TextFn = int (*)(int, const char**);
    void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (driver == nullptr) return UnavailableError("cuInit: libcuda.so.1 not found (no NVIDIA driver)");
    auto init = reinterpret_cast<InitFn>(dlsym(driver, "cuInit"));
    if (init == nullptr) return UnavailableError("cuInit: libcuda.so.1 has no cuInit");
    g_touched_cuda = true;
    const int rc = init(0);
    if (rc == 0) return OkStatus();
    // The stub library answers every call, these two included, with 34.
    const char* name = nullptr;
    const char* text = nullptr;
    auto get_name = reinterpret_cast<TextFn>(dlsym(driver, "cuGetErrorName"));
    auto get_text = reinterpret_cast<TextFn>(dlsym(driver, "cuGetErrorString"));
    if (get_name == nullptr || get_name(rc, &name) != 0 || name == nullptr) name = DriverErrorName(rc);
    if (get_text == nullptr || get_text(rc, &text) != 0 || text == nullptr) text = DriverErrorString(rc);
    return CudaCallError(rc, name, text, "cuInit", loc);
  }
  Result<void*> DoMallocHost(size_t bytes, SourceLocation loc) override {
    void* ptr = nullptr;
    FL_CUDA_CALL("cudaMallocHost", cudaMallocHost(&ptr, bytes), loc);
    return ptr;
  }
  Status DoFreeHost(void* ptr, SourceLocation loc) override {
    FL_CUDA_CALL("cudaFreeHost", cudaFreeHost(ptr), loc);
    return OkStatus();
  }
  Status DoDeviceReset(SourceLocation loc) override {
    FL_CUDA_CALL("cudaDeviceReset", cudaDeviceReset(), loc);
    return OkStatus();
  }
  Result<void*> DoMalloc(size_t bytes, SourceLocation loc) override {
    void* ptr = nullptr;
    FL_CUDA_CALL("cudaMalloc", cudaMalloc(&ptr, bytes), loc);
    return ptr;
  }
  Status DoFree(void* ptr, SourceLocation loc) override {
    FL_CUDA_CALL("cudaFree", cudaFree(ptr), loc);
    return OkStatus();
  }
  Status DoMemcpy(void* dst, const void* src, size_t bytes, MemcpyKind kind, StreamHandle stream, bool async,
                  SourceLocation loc) override {
    auto cuda_kind = static_cast<cudaMemcpyKind>(kind);
    if (async) {
      FL_CUDA_CALL("cudaMemcpyAsync", cudaMemcpyAsync(dst, src, bytes, cuda_kind, static_cast<cudaStream_t>(stream)),
                   loc);
    } else {
      FL_CUDA_CALL("cudaMemcpy", cudaMemcpy(dst, src, bytes, cuda_kind), loc);
    }
    return OkStatus();
  }
  Status DoHostRegister(void* ptr, size_t bytes, SourceLocation loc) override {
    FL_CUDA_CALL("cudaHostRegister", cudaHostRegister(ptr, bytes, cudaHostRegisterDefault), loc);
    return OkStatus();
  }
  Status DoHostUnregister(void* ptr, SourceLocation loc) override {
    FL_CUDA_CALL("cudaHostUnregister", cudaHostUnregister(ptr), loc);
    return OkStatus();
  }
  Result<PointerAttributes> DoGetPointerAttributes(const void* ptr, SourceLocation loc) override {
    cudaPointerAttributes attrs{};
    FL_CUDA_CALL("cudaPointerGetAttributes", cudaPointerGetAttributes(&attrs, ptr), loc);
    return PointerAttributes{static_cast<MemoryType>(attrs.type),
                             attrs.type == cudaMemoryTypeUnregistered ? -1 : attrs.device};
  }
  Result<StreamHandle> DoStreamCreate(SourceLocation loc) override {
    cudaStream_t stream = nullptr;
    FL_CUDA_CALL("cudaStreamCreate", cudaStreamCreate(&stream), loc);
    return static_cast<StreamHandle>(stream);
  }
  Status DoStreamSynchronize(StreamHandle stream, SourceLocation loc) override {
    FL_CUDA_CALL("cudaStreamSynchronize", cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), loc);
    return OkStatus();
  }
  Status DoStreamDestroy(StreamHandle stream, SourceLocation loc) override {
    FL_CUDA_CALL("cudaStreamDestroy", cudaStreamDestroy(static_cast<cudaStream_t>(stream)), loc);
    return OkStatus();
  }
  Status DoDeviceSynchronize(SourceLocation loc) override {
    FL_CUDA_CALL("cudaDeviceSynchronize", cudaDeviceSynchronize(), loc);
    return OkStatus();
  }
  Result<EventHandle> DoEventCreate(SourceLocation loc) override {
    cudaEvent_t event = nullptr;
    FL_CUDA_CALL("cudaEventCreate", cudaEventCreate(&event), loc);
    return static_cast<EventHandle>(event);
  }
  Status DoEventRecord(EventHandle event, StreamHandle stream, SourceLocation loc) override {
    FL_CUDA_CALL("cudaEventRecord", cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream)),
                 loc);
    return OkStatus();
  }
  Status DoEventQuery(EventHandle event, SourceLocation loc) override {
    FL_CUDA_CALL("cudaEventQuery", cudaEventQuery(static_cast<cudaEvent_t>(event)), loc);
    return OkStatus();
  }
  Status DoEventSynchronize(EventHandle event, SourceLocation loc) override {
    FL_CUDA_CALL("cudaEventSynchronize", cudaEventSynchronize(static_cast<cudaEvent_t>(event)), loc);
    return OkStatus();
  }
  Status DoEventDestroy(EventHandle event, SourceLocation loc) override {
    FL_CUDA_CALL("cudaEventDestroy", cudaEventDestroy(static_cast<cudaEvent_t>(event)), loc);
    return OkStatus();
  }
  Status DoLaunch(const char* kernel, const LaunchConfig&, const BufferUse*, size_t, const std::function<void()>&,
                  const std::function<int()>& cuda_launch, SourceLocation loc) override {
    g_touched_cuda = true;
    return CudaStatus(cuda_launch(), "cudaLaunchKernel", loc, std::string("kernel ") + kernel);
  }
  Status DoGetLastError(bool clear, SourceLocation loc) override {
    cudaError_t code = clear ? cudaGetLastError() : cudaPeekAtLastError();
    return CudaStatus(code, clear ? "cudaGetLastError" : "cudaPeekAtLastError", loc);
  }
};

}  // namespace

DeviceRuntime& CudaRuntimeInstance() {
  static auto* runtime = new CudaRuntime();
  return *runtime;
}

bool CudaDevicePresent() {
  Result<int> count = ProbeDeviceCount(RuntimeKind::kCuda);
  return count.ok() && *count > 0;
}

bool BackendInitialized(RuntimeKind kind) {
  switch (kind) {
    case RuntimeKind::kCpu: return true;  // nothing to initialize
    case RuntimeKind::kSimCuda: return SimCuda().initialized();
    case RuntimeKind::kCuda: return g_touched_cuda;
  }
  return true;
}

}  // namespace faultline
