// The documented symptom of F9 (PyTorch #95073; vLLM #4969): a
// device count cached before CUDA_VISIBLE_DEVICES took its final value is
// stale, and selecting a device it promises fails with an invalid ordinal.
#ifndef FAULTLINE_REPRO_F9_SIGNATURE_H_
#define FAULTLINE_REPRO_F9_SIGNATURE_H_

#include "repro/registry.h"

namespace faultline {
namespace repro {

// simcuda adds which device was asked for and how many there are; real CUDA
// adds nothing.
inline Signature F9LegacyStaleCount(RuntimeKind runtime) {
  return {"cudaErrorInvalidDevice", 101,
          Pattern(R"(cudaSetDevice failed: invalid device ordinal)" +
                  SimCudaDetail(runtime, R"(; device 1 is not in \[0, 1\))")),
          ProcessWithPid("main process"), "set_device"};
}

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_F9_SIGNATURE_H_
