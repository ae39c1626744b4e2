// Implements the cuda backend over the real CUDA runtime (libcudart). Without
// a driver or a device every call returns the runtime's own error, and
// DeviceCount() is 0.
#include "reference/runtime/cuda_runtime.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "reference/runtime/backends.h"
#include "reference/runtime/cuda_errors.h"

namespace faultline {
namespace {

// Set once this process has made a CUDA runtime call through this backend.
std::atomic<bool> g_touched_cuda{false};

#define FL_CUDA_CALL(api, expr, loc)               \
  do {                                             \
    g_touched_cuda = true;                         \
    cudaError_t _fl_err = (expr);                  \
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
    if (int rc = init(0); rc != 0) return UnavailableError("PrimaryContextActive: cuInit returned " + std::to_string(rc));
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
      FL_CUDA_CALL("cudaMemcpyAsync",
                   cudaMemcpyAsync(dst, src, bytes, cuda_kind, static_cast<cudaStream_t>(stream)), loc);
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
  Status DoGetLastError(bool clear, SourceLocation loc) override {
    cudaError_t code = clear ? cudaGetLastError() : cudaPeekAtLastError();
    return CudaStatus(code, clear ? "cudaGetLastError" : "cudaPeekAtLastError", loc);
  }
};

}  // namespace

Status CudaStatus(int code, const char* api, SourceLocation loc, const std::string& detail) {
  if (code == cudaSuccess) return OkStatus();
  auto err = static_cast<cudaError_t>(code);
  return CudaCallError(code, cudaGetErrorName(err), cudaGetErrorString(err), api, loc, detail);
}

DeviceRuntime& CudaRuntimeInstance() {
  static auto* runtime = new CudaRuntime();
  return *runtime;
}

bool CudaDevicePresent() {
  if (g_touched_cuda) return CudaRuntimeInstance().DeviceCount() > 0;
  // Ask in a forked child so this process stays free of CUDA: initializing
  // CUDA here would break every fork-started worker it later creates.
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    int count = 0;
    _exit(cudaGetDeviceCount(&count) == cudaSuccess && count > 0 ? 0 : 1);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace faultline
