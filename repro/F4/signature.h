// The documented symptom of F4 (PEFT #1877, HuixiangDou #349): a
// fork-started child of a process whose CUDA was initialized (at library
// load time, or by using the device) fails PyTorch's lazy CUDA init.
#ifndef FAULTLINE_REPRO_F4_SIGNATURE_H_
#define FAULTLINE_REPRO_F4_SIGNATURE_H_

#include "reference/runtime/lazy_init.h"
#include "repro/registry.h"

namespace faultline {
namespace repro {

// PyTorch raises this RuntimeError before any CUDA call, so it carries no
// CUDA error code (torch 2.11 on an H100, docs/gpu-validation.md).
// The driver's own answer follows in parentheses: real CUDA closes them,
// simcuda goes on with where the parent initialized CUDA.
inline std::string F4Message(RuntimeKind runtime) {
  return ClosedOrForkNote(runtime,
                          Quote(std::string(kCannotReinitializeCuda) + " (cuInit failed: initialization error"));
}
inline Signature F4LegacyWorker(RuntimeKind runtime) {
  return {"failed_precondition", 0, Pattern(F4Message(runtime)), ProcessWithPid("worker 0"), "lazy_init"};
}
inline Signature F4ServiceFork(RuntimeKind runtime) {
  return {"failed_precondition", 0, Pattern(F4Message(runtime)), ProcessWithPid("service child"), "lazy_init"};
}

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_F4_SIGNATURE_H_
