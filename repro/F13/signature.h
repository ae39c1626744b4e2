// The documented symptom of F13 (PyTorch #153143): after the parent
// initialized CUDA, a fork-started DataLoader worker that loads a sparse
// tensor fails the pinning check torch 2.5 added to the tensor's validation.
#ifndef FAULTLINE_REPRO_F13_SIGNATURE_H_
#define FAULTLINE_REPRO_F13_SIGNATURE_H_

#include "repro/registry.h"
#include "repro/sparse_load_child.h"

namespace faultline {
namespace repro {

// The worker's pinning check fails (repro/sparse_load_child.h).
inline Signature F13LegacyWorker(RuntimeKind runtime) { return PinningCheckInForkedWorker(runtime); }

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_F13_SIGNATURE_H_
