// Implements the F6 backend host. The library files ship as Bazel runfiles
// next to the binary (<binary>.runfiles/faultline/repro/F6/);
// FAULTLINE_BACKEND_DIR overrides the directory.
#include "repro/F6/backend_host.h"

#include <atomic>
#include <mutex>
#include <string>
#include <utility>

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

const char* BackendFile(ProbeKind kind) {
  return kind == ProbeKind::kCuInit ? "libfaultline_backend_cuinit.so" : "libfaultline_backend_nvml.so";
}

// Calls the library's `int name()` entry; negative means it found no
// faultline_f6_host_* hook in the host binary.
Result<int> CallEntry(const SharedLibrary& library, const char* name) {
  FL_ASSIGN_OR_RETURN(auto* entry, library.Function<int()>(name));
  const int result = entry();
  if (result < 0) {
    return InternalError(library.path() + " could not find the faultline_f6_host_* hooks in the host binary");
  }
  return result;
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
  FL_ASSIGN_OR_RETURN(std::string path, FindRunfile("repro/F6", BackendFile(kind), "FAULTLINE_BACKEND_DIR"));
  // Set before loading: the library's static initializer probes through the hooks.
  g_runtime.store(runtime);
  FL_ASSIGN_OR_RETURN(SharedLibrary library, SharedLibrary::Open(path));
  return Backend(std::move(library));
}

Status Backend::ActiveAtLoad() const {
  FL_ASSIGN_OR_RETURN(const int active, CallEntry(library_, "faultline_backend_active_at_load"));
  return active == 1 ? OkStatus() : LastProbe();
}

Status Backend::ResolveActiveDriver() const {
  FL_ASSIGN_OR_RETURN(const int active, CallEntry(library_, "faultline_backend_is_active"));
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
