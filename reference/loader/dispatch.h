// Provides the data loader's two upstream decisions in both behaviours:
// `legacy` (the upstream code before the fix) and `fixed` (docs/failures/F1.md, F2.md):
// - GPU dispatch (DGL 6921 / 6924): whether sampling runs on the device;
// - pin handling (DGL 7381): what a worker does with a pinned graph it received.
#ifndef FAULTLINE_REFERENCE_LOADER_DISPATCH_H_
#define FAULTLINE_REFERENCE_LOADER_DISPATCH_H_

#include <string_view>

#include "reference/base/status.h"
#include "reference/runtime/runtime.h"

namespace faultline {

enum class Behaviour { kLegacy, kFixed };

// Returns "legacy" or "fixed".
const char* BehaviourName(Behaviour behaviour);
// Parses "legacy" or "fixed"; `what` names the option in the error.
Result<Behaviour> ParseBehaviour(std::string_view text, std::string_view what);

// Where the graph's arrays live, as the graph itself records it.
struct GraphResidence {
  const void* data = nullptr;  // the first array (indptr)
  bool on_device = false;
  bool pinned = false;  // pinned host memory, per the graph's own record
};

// Decides whether to sample on the device (the dispatch decision itself).
// legacy: is_accessible_from_gpu(graph) = on_gpu(graph) || is_pinned(graph),
//   where is_pinned asks CUDA for the pointer's attributes: a CUDA call even
//   in CPU mode, which fails in a worker forked from a parent that used CUDA.
// fixed: on_gpu(seeds) && (graph on the device || pinned per its record);
//   never a CUDA call, so CPU mode never touches CUDA.
Result<bool> DecideDeviceDispatch(Behaviour dispatch, DeviceRuntime& runtime, bool seeds_on_device,
                                  const GraphResidence& graph);

// Restores a pinned graph received by a worker process.
// legacy: the state carries the pinning process's unpinner
//   (cudaHostUnregister), which the worker calls on the memory it received
//   before pinning for itself; pinning is per process, so it fails.
// fixed: the state carries no unpinner; only the owner ever unpins (Note [Pin
// ownership per process] in reference/tensor/tensor.cc).
Status RestorePinnedGraphInWorker(Behaviour pin_handling, DeviceRuntime& runtime, void* pinned_data);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_LOADER_DISPATCH_H_
