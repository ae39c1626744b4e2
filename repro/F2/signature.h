// The documented symptom of F2 (DGL issue 7381): a data-loader worker fails
// restoring the pinned graph it received, on the parent's unpin function
// (cudaHostUnregister). Forked: CUDA cannot be used at all (3); spawned: the
// worker cannot unpin memory it did not pin (713).
#ifndef FAULTLINE_REPRO_F2_SIGNATURE_H_
#define FAULTLINE_REPRO_F2_SIGNATURE_H_

#include "repro/registry.h"

namespace faultline {
namespace repro {

inline const Signature kF2LegacyFork{"cudaErrorInitializationError", 3,
                                     "cudaHostUnregister failed: initialization error", "worker ", "restore_state"};
inline const Signature kF2LegacySpawn{"cudaErrorHostMemoryNotRegistered", 713,
                                      "cudaHostUnregister failed: pointer does not correspond to a registered memory "
                                      "region",
                                      "worker ", "restore_state"};

// What the fixed loader says when asked for workers in a device sampling mode.
inline constexpr char kF2FixedRefusal[] =
    "num_workers is 2 with mode pinned-cuda; expected 0: device sampling cannot run in worker processes";

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_F2_SIGNATURE_H_
