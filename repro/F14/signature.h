// The documented symptom of F14 (PyTorch #144687): a script that never
// touched CUDA iterates a pin_memory=True DataLoader; its fork-started
// worker, loading a sparse tensor, fails the pinning check because the
// loader's own availability check initialized CUDA in the parent.
#ifndef FAULTLINE_REPRO_F14_SIGNATURE_H_
#define FAULTLINE_REPRO_F14_SIGNATURE_H_

#include "repro/registry.h"
#include "repro/sparse_load_child.h"

namespace faultline {
namespace repro {

// The worker's pinning check fails as F13's does (repro/sparse_load_child.h);
// only who initialized CUDA in the parent differs.
inline Signature F14LegacyWorker(RuntimeKind runtime) { return PinningCheckInForkedWorker(runtime); }

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_F14_SIGNATURE_H_
