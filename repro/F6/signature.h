// The documented symptom of F6 (Triton PR 9578, seen as PyTorch #184643
// and vLLM #46996): in a process forked after the parent's backend probe
// initialized CUDA, the probe finds no active driver and Triton's driver
// resolution fails; the CUDA error underneath is the fork's initialization error.
#ifndef FAULTLINE_REPRO_F6_SIGNATURE_H_
#define FAULTLINE_REPRO_F6_SIGNATURE_H_

#include <string>

#include "repro/F6/backend_host.h"
#include "repro/registry.h"

namespace faultline {
namespace repro {

// The error underneath is cuInit's in the forked child (driver API): 3,
// CUDA_ERROR_NOT_INITIALIZED (seen on an H100, docs/gpu-validation.md).
// Triton's message, then the probe's CUDA error: on real CUDA it ends there
// (")"); simcuda adds its fork note.
inline Signature F6LegacyWorker(RuntimeKind runtime) {
  return {"CUDA_ERROR_NOT_INITIALIZED", 3,
          Pattern(ClosedOrForkNote(runtime, Quote(std::string(kZeroActiveDrivers) +
                                                  " (the NVIDIA backend's is_active() returned False: cuInit "
                                                  "failed: initialization error"))),
          ProcessWithPid("worker 0"), "driver.active"};
}

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_F6_SIGNATURE_H_
