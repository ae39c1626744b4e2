// Implements the legacy and fixed dispatch and pin-handling decisions.
#include "reference/loader/dispatch.h"

#include <string>

namespace faultline {

const char* BehaviourName(Behaviour behaviour) { return behaviour == Behaviour::kLegacy ? "legacy" : "fixed"; }

Result<Behaviour> ParseBehaviour(std::string_view text, std::string_view what) {
  if (text == "legacy") return Behaviour::kLegacy;
  if (text == "fixed") return Behaviour::kFixed;
  return InvalidArgumentError(std::string(what) + " is '" + std::string(text) + "'; expected legacy or fixed");
}

Result<bool> DecideDeviceDispatch(Behaviour dispatch, DeviceRuntime& runtime, bool seeds_on_device,
                                  const GraphResidence& graph) {
  if (dispatch == Behaviour::kLegacy) {
    if (graph.on_device) return true;
    return runtime.IsPinned(graph.data);
  }
  return seeds_on_device && (graph.on_device || graph.pinned);
}

Status RestorePinnedGraphInWorker(Behaviour pin_handling, DeviceRuntime& runtime, void* pinned_data) {
  if (pin_handling == Behaviour::kFixed) return OkStatus();
  return runtime.HostUnregister(pinned_data);
}

}  // namespace faultline
