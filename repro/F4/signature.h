// The documented symptom of F4 (PEFT issue 1877, HuixiangDou issue 349): a
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
inline const Signature kF4LegacyWorker{"failed_precondition", 0, kCannotReinitializeCuda, "worker ", "lazy_init"};
inline const Signature kF4ServiceFork{"failed_precondition", 0, kCannotReinitializeCuda, "service child ",
                                      "lazy_init"};

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_F4_SIGNATURE_H_
