// A GPU backend shared library (Triton's NVIDIA backend), built twice. At
// load time a static initializer asks whether the backend is active, as
// `vllm.triton_utils` does on import (`backend.driver.is_active()`).
//
//   cuinit (FAULTLINE_BACKEND_PROBE_INITIALIZES=1): is_active() probes the
//     driver with a call that initializes CUDA — Triton PR 9578's cuInit(0).
//   nvml   (FAULTLINE_BACKEND_PROBE_INITIALIZES=0): is_active() asks a check
//     that does not initialize — Triton PR 10935 uses torch's availability
//     check, which under PYTORCH_NVML_BASED_CUDA_CHECK is an NVML count.
//
// The calls go through the host process's hooks, found at load time, so the
// library uses the host's runtime (simcuda state is per process image).
#include <dlfcn.h>

namespace {

// Returns 1 when the backend's driver is active, 0 when not, -1 without a host.
int IsActive() {
  using Probe = int (*)();
  const char* hook = FAULTLINE_BACKEND_PROBE_INITIALIZES ? "faultline_f6_host_cu_init" : "faultline_f6_host_nvml_count";
  auto probe = reinterpret_cast<Probe>(dlsym(RTLD_DEFAULT, hook));
  if (probe == nullptr) return -1;
  // cuInit(0) == CUDA_SUCCESS, or an NVML device count above zero.
  return probe() > 0 ? 1 : 0;
}

const int g_active_at_load = IsActive();

}  // namespace

extern "C" int faultline_backend_is_active() { return IsActive(); }

// What the static initializer found when the library was loaded.
extern "C" int faultline_backend_active_at_load() { return g_active_at_load; }
