// The documented symptom of F15 (accelerate #3524): the library's import
// initialized CUDA, so the workers notebook_launcher forks fail PyTorch's
// lazy CUDA init.
#ifndef FAULTLINE_REPRO_F15_SIGNATURE_H_
#define FAULTLINE_REPRO_F15_SIGNATURE_H_

#include "repro/gather_child.h"
#include "repro/registry.h"

namespace faultline {
namespace repro {

// A worker's lazy init refused (repro/gather_child.h).
inline Signature F15LegacyWorker(RuntimeKind runtime) { return LazyInitRefusedInForkedWorker(runtime); }

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_F15_SIGNATURE_H_
