// The documented symptom of F1 (DGL #6921): CPU-mode sampling in a
// forked data-loader worker fails with "CUDA error: initialization error"
// inside sample_neighbors.
#ifndef FAULTLINE_REPRO_F1_SIGNATURE_H_
#define FAULTLINE_REPRO_F1_SIGNATURE_H_

#include "repro/registry.h"

namespace faultline {
namespace repro {

// The loader names the worker, the step and the minibatch before the CUDA
// error; simcuda adds where the parent initialized CUDA (kForkNotePattern).
inline Signature F1Legacy(RuntimeKind runtime) {
  return {"cudaErrorInitializationError", 3,
          Pattern(WithForkNote(runtime, R"(worker \d+ \(pid \d+\) failed in sample_neighbors on minibatch \d+: )"
                                        R"(cudaPointerGetAttributes failed: initialization error)")),
          ProcessWithPid(R"(worker \d+)"), "sample_neighbors"};
}

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_F1_SIGNATURE_H_
