// The documented symptom of F11 (DGL #7010, fix PR 7217): with the same
// seed, unique_and_compact numbers the sampled nodes differently when the
// worker threads insert in a different order — named here as the first
// unique node that differs from faultline's first-appearance reference.
#ifndef FAULTLINE_REPRO_F11_SIGNATURE_H_
#define FAULTLINE_REPRO_F11_SIGNATURE_H_

#include "repro/registry.h"

namespace faultline {
namespace repro {

// Upstream raised nothing: the sampled blocks differed between runs.
// faultline names the mismatch OutputMismatch (code 0); the schedule is
// forced, so the message is exact.
inline const Signature kF11Legacy{"OutputMismatch", 0,
                                  "unique_and_compact (2 workers, inserting in order 1 0): unique_nodes[69] = 545, "
                                  "expected 128 (first appearance)",
                                  ProcessWithPid("main process"), "unique_and_compact"};

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_F11_SIGNATURE_H_
