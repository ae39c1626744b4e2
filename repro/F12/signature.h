// The documented symptom of F12 (DGL PR 2596, bug 1): after one training
// step in which an embedding was looked up twice, the rows in both lookups
// differ from the dense reference — named here as the first differing weight.
#ifndef FAULTLINE_REPRO_F12_SIGNATURE_H_
#define FAULTLINE_REPRO_F12_SIGNATURE_H_

#include "repro/registry.h"

namespace faultline {
namespace repro {

// Upstream raised nothing: the trained embedding was wrong. faultline names
// the mismatch OutputMismatch (code 0); the float math is deterministic, so
// the message is exact.
inline const Signature kF12Legacy{"OutputMismatch", 0,
                                  "SparseAdagrad.step: weight row 3 col 0 = 0.699613869, dense reference 0.649999976",
                                  ProcessWithPid("trainer 0"), "SparseAdagrad.step"};

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_F12_SIGNATURE_H_
