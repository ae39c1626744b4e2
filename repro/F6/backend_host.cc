// Implements the F6 backend host. The library files ship as Bazel runfiles
// next to the binary (<binary>.runfiles/faultline/repro/F6/);
// FAULTLINE_BACKEND_DIR overrides the directory.
#include "repro/F6/backend_host.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <mutex>

#include "reference/process/process.h"

namespace faultline {
namespace repro {
namespace {

std::atomic<RuntimeKind> g_runtime{RuntimeKind::kSimCuda};
std::mutex g_mu;
Status* g_last_probe = new Status();  // the last probe's failure, if it failed

void RecordProbe(const Status& s) {
  std::lock_guard<std::mutex> lock(g_mu);
  *g_last_probe = s;
}

Status LastProbe() {
  std::lock_guard<std::mutex> lock(g_mu);
  return *g_last_probe;
}

Result<std::string> BackendPath(ProbeKind kind) {
  const std::string file = kind == ProbeKind::kCuInit ? "libfaultline_backend_cuinit.so" : "libfaultline_backend_nvml.so";
  std::string tried;
  if (const char* dir = std::getenv("FAULTLINE_BACKEND_DIR"); dir && *dir) {
    const std::string path = std::string(dir) + "/" + file;
    if (access(path.c_str(), R_OK) == 0) return path;
    tried += path + " ";
  }
  FL_ASSIGN_OR_RETURN(std::string self, SelfExecutable());
  const std::string path = self + ".runfiles/faultline/repro/F6/" + file;
  if (access(path.c_str(), R_OK) == 0) return path;
  tried += path;
  return NotFoundError("backend " + file + " not found; tried " + tried + " (set FAULTLINE_BACKEND_DIR)");
}

}  // namespace

// cuInit(0), as Triton's is_active() calls it after PR 9578. Returns 1 on
// success, 0 when it fails (recorded).
extern "C" __attribute__((visibility("default"), used)) int faultline_f6_host_cu_init() {
  Status init = GetRuntime(g_runtime.load()).DriverInit();
  RecordProbe(init);
  return init.ok() ? 1 : 0;
}

// nvmlDeviceGetCount: the device count without initializing CUDA.
extern "C" __attribute__((visibility("default"), used)) int faultline_f6_host_nvml_count() {
  Result<int> count = GetRuntime(g_runtime.load()).NvmlDeviceCount();
  RecordProbe(count.status());
  return count.ok() ? *count : 0;
}

Result<Backend> Backend::Load(ProbeKind kind, RuntimeKind runtime) {
  FL_ASSIGN_OR_RETURN(std::string path, BackendPath(kind));
  g_runtime.store(runtime);
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return UnavailableError("dlopen " + path + " failed: " + dlerror());
  return Backend(handle, path);
}

Backend::~Backend() {
  if (handle_ != nullptr) dlclose(handle_);
}

Status Backend::ActiveAtLoad() const {
  using Fn = int (*)();
  auto at_load = reinterpret_cast<Fn>(dlsym(handle_, "faultline_backend_active_at_load"));
  if (at_load == nullptr) return InternalError(path_ + " has no faultline_backend_active_at_load");
  const int active = at_load();
  if (active < 0) return InternalError(path_ + " could not find the faultline_f6_host_* hooks in the host binary");
  return active == 1 ? OkStatus() : LastProbe();
}

Status Backend::ResolveActiveDriver() const {
  using Fn = int (*)();
  auto is_active = reinterpret_cast<Fn>(dlsym(handle_, "faultline_backend_is_active"));
  if (is_active == nullptr) return InternalError(path_ + " has no faultline_backend_is_active");
  const int active = is_active();
  if (active < 0) return InternalError(path_ + " could not find the faultline_f6_host_* hooks in the host binary");
  if (active == 1) return OkStatus();
  // Triton's _create_driver() counts the active backends: none.
  const Status probe = LastProbe();
  const std::string why = probe.ok() ? "the NVIDIA backend's is_active() returned False"
                                     : "the NVIDIA backend's is_active() returned False: " + probe.message();
  if (const auto& cuda = probe.cuda_error()) return Status(*cuda, std::string(kZeroActiveDrivers) + " (" + why + ")");
  return UnavailableError(std::string(kZeroActiveDrivers) + " (" + why + ")");
}

}  // namespace repro
}  // namespace faultline
