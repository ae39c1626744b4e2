// The documented symptom of F5 (PyTorch issue 83973): after the parent asked
// torch.cuda.device_count(), a fork-started worker that uses CUDA fails
// PyTorch's lazy CUDA init.
#ifndef FAULTLINE_REPRO_F5_SIGNATURE_H_
#define FAULTLINE_REPRO_F5_SIGNATURE_H_

#include "reference/runtime/lazy_init.h"
#include "repro/registry.h"

namespace faultline {
namespace repro {

inline const Signature kF5LegacyWorker{"cudaErrorInitializationError", 3, kCannotReinitializeCuda, "worker ",
                                       "lazy_init"};

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_F5_SIGNATURE_H_
