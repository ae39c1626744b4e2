// The documented symptom of F10 (DGL PR 6900, found testing PR 6895): after
// seed(2024) a thread that had already sampled keeps its old stream, so the
// second sample differs from the first — named here as the first pick that
// differs from a generator freshly seeded with 2024.
#ifndef FAULTLINE_REPRO_F10_SIGNATURE_H_
#define FAULTLINE_REPRO_F10_SIGNATURE_H_

#include "repro/registry.h"

namespace faultline {
namespace repro {

// Upstream raised nothing: the samples differed. faultline names the
// mismatch OutputMismatch (code 0). The message is exact: the model is
// deterministic (mt19937_64, a generated graph with seed 7).
inline const Signature kF10Legacy{"OutputMismatch", 0,
                                  "sample_neighbors after seed(2024), run 2: picks[0] = 264, expected 290 (a "
                                  "generator freshly seeded with 2024)",
                                  ProcessWithPid("main process"), "sample_neighbors"};

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_F10_SIGNATURE_H_
