// The documented symptom of F5 (PyTorch #83973): after the parent asked
// torch.cuda.device_count(), a fork-started worker that uses CUDA fails
// PyTorch's lazy CUDA init.
#ifndef FAULTLINE_REPRO_F5_SIGNATURE_H_
#define FAULTLINE_REPRO_F5_SIGNATURE_H_

#include "repro/gather_child.h"
#include "repro/registry.h"

namespace faultline {
namespace repro {

// A worker's lazy init refused (repro/gather_child.h).
inline Signature F5LegacyWorker(RuntimeKind runtime) { return LazyInitRefusedInForkedWorker(runtime); }

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_F5_SIGNATURE_H_
