// The documented symptom of F3 (DGL #7333, introduced by PR 7146): a
// DistEmbedding forward with ids on cuda:0 reaches nid2partid, which takes a
// host (NumPy) view of the ids and fails with PyTorch's TypeError text.
#ifndef FAULTLINE_REPRO_F3_SIGNATURE_H_
#define FAULTLINE_REPRO_F3_SIGNATURE_H_

#include "repro/registry.h"

namespace faultline {
namespace repro {

// PyTorch raises TypeError; faultline's status for it is failed_precondition.
// The message carries the call chain: forward -> pull -> nid2partid.
inline const Signature kF3Legacy{"failed_precondition", 0,
                                 "DistEmbedding('emb').forward: DistTensor('emb').pull: nid2partid: can't convert "
                                 "cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host "
                                 "memory first.",
                                 ProcessWithPid("trainer 0"), "DistEmbedding.forward"};

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_F3_SIGNATURE_H_
