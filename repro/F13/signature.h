// The documented symptom of F13 (PyTorch #153143): after the parent
// initialized CUDA, a fork-started DataLoader worker that loads a sparse
// tensor fails the pinning check torch 2.5 added to the tensor's validation.
#ifndef FAULTLINE_REPRO_F13_SIGNATURE_H_
#define FAULTLINE_REPRO_F13_SIGNATURE_H_

#include "repro/registry.h"

namespace faultline {
namespace repro {

// Asking whether the loaded indices are pinned is a CUDA runtime call
// (cudaPointerGetAttributes, as Tensor.is_pinned() makes it), and in a child
// forked after CUDA was initialized every such call fails with 3
// (docs/simcuda.md, pinned_memory_in_forked_child). PyTorch shows it as
// "CUDA error: initialization error".
inline Signature F13LegacyWorker(RuntimeKind runtime) {
  return {"cudaErrorInitializationError", 3,
          Pattern(WithForkNote(runtime, Quote("cudaPointerGetAttributes failed: initialization error"))),
          ProcessWithPid(R"(worker \d+)"), "validate_sparse_coo_tensor_args"};
}

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_F13_SIGNATURE_H_
