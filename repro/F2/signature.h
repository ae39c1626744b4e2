// The documented symptom of F2 (DGL #7381): a data-loader worker fails
// restoring the pinned graph it received, on the parent's unpin function
// (cudaHostUnregister). Forked: CUDA cannot be used at all (3); spawned: the
// worker cannot unpin memory it did not pin (713).
#ifndef FAULTLINE_REPRO_F2_SIGNATURE_H_
#define FAULTLINE_REPRO_F2_SIGNATURE_H_

#include "repro/registry.h"

namespace faultline {
namespace repro {

// The loader names the worker, the step and the minibatch before the CUDA
// error; simcuda adds its detail after it (real CUDA adds none).
inline Signature F2LegacyFork(RuntimeKind runtime) {
  return {"cudaErrorInitializationError", 3,
          Pattern(WithForkNote(runtime, R"(worker \d+ \(pid \d+\) failed in restore_state on minibatch \d+: )"
                                        R"(cudaHostUnregister failed: initialization error)")),
          ProcessWithPid(R"(worker \d+)"), "restore_state"};
}
inline Signature F2LegacySpawn(RuntimeKind runtime) {
  return {"cudaErrorHostMemoryNotRegistered", 713,
          Pattern(R"(worker \d+ \(pid \d+\) failed in restore_state on minibatch \d+: )"
                  R"(cudaHostUnregister failed: pointer does not correspond to a registered memory region)" +
                  SimCudaDetail(runtime, R"(; 0x[0-9a-f]+ was not registered by this process \(pid \d+\); pinning )"
                                         R"(is per process, only the process that pinned memory can unpin it)")),
          ProcessWithPid(R"(worker \d+)"), "restore_state"};
}

// What the fixed loader says when asked for workers in a device sampling mode.
inline constexpr char kF2FixedRefusal[] =
    "num_workers is 2 with mode pinned-cuda; expected 0: device sampling cannot run in worker processes";

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_F2_SIGNATURE_H_
