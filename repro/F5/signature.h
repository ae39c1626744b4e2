// The documented symptom of F5 (PyTorch #83973): after the parent asked
// torch.cuda.device_count(), a fork-started worker that uses CUDA fails
// PyTorch's lazy CUDA init.
#ifndef FAULTLINE_REPRO_F5_SIGNATURE_H_
#define FAULTLINE_REPRO_F5_SIGNATURE_H_

#include "reference/runtime/lazy_init.h"
#include "repro/registry.h"

namespace faultline {
namespace repro {

// PyTorch raises this RuntimeError before any CUDA call, so it carries no
// CUDA error code (torch 2.11 on an H100, docs/gpu-validation.md).
// The driver's own answer follows in parentheses: real CUDA closes them,
// simcuda goes on with where the parent initialized CUDA.
inline Signature F5LegacyWorker(RuntimeKind runtime) {
  return {"failed_precondition", 0,
          Pattern(ClosedOrForkNote(
              runtime, Quote(std::string(kCannotReinitializeCuda) + " (cuInit failed: initialization error"))),
          ProcessWithPid(R"(worker \d+)"), "lazy_init"};
}

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_F5_SIGNATURE_H_
