// The documented symptom of F9 (PyTorch issue 95073; vLLM issue 4969): a
// device count cached before CUDA_VISIBLE_DEVICES took its final value is
// stale, and selecting a device it promises fails with an invalid ordinal.
#ifndef FAULTLINE_REPRO_F9_SIGNATURE_H_
#define FAULTLINE_REPRO_F9_SIGNATURE_H_

#include "repro/registry.h"

namespace faultline {
namespace repro {

inline const Signature kF9LegacyStaleCount{"cudaErrorInvalidDevice", 101, "cudaSetDevice failed: invalid device ordinal",
                                           "main process ", "set_device"};

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_F9_SIGNATURE_H_
