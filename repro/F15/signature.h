// The documented symptom of F15 (accelerate #3524): the library's import
// initialized CUDA, so the workers notebook_launcher forks fail PyTorch's
// lazy CUDA init.
#ifndef FAULTLINE_REPRO_F15_SIGNATURE_H_
#define FAULTLINE_REPRO_F15_SIGNATURE_H_

#include "reference/runtime/lazy_init.h"
#include "repro/registry.h"

namespace faultline {
namespace repro {

// PyTorch's RuntimeError, raised before any CUDA call (no CUDA code), then
// the driver's own answer in parentheses: real CUDA closes them, simcuda
// goes on with where the parent initialized CUDA.
inline Signature F15LegacyWorker(RuntimeKind runtime) {
  return {"failed_precondition", 0,
          Pattern(ClosedOrForkNote(
              runtime, Quote(std::string(kCannotReinitializeCuda) + " (cuInit failed: initialization error"))),
          ProcessWithPid(R"(worker \d+)"), "lazy_init"};
}

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_F15_SIGNATURE_H_
