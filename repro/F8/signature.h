// The documented symptom of F8 (PyTorch PR 4196; issues 21081, 58626): a
// process that trains on device 1 also holds a primary context on device 0,
// created by cudaMallocHost in the pin-memory thread, whose current device is
// the default, 0. No CUDA call fails — the context costs device 0 memory and
// shows the process on GPU 0 in nvidia-smi — so the harness reports what it
// observes (PrimaryContextActive) as this signature.
#ifndef FAULTLINE_REPRO_F8_SIGNATURE_H_
#define FAULTLINE_REPRO_F8_SIGNATURE_H_

#include <string>

#include "repro/registry.h"

namespace faultline {
namespace repro {

inline constexpr char kF8ErrorName[] = "UnwantedPrimaryContext";
inline constexpr char kF8Message[] = "primary context created on device 0 by cudaMallocHost in the pin-memory thread";

// The whole message: the legacy pin thread never sets a device, so its current
// device is always 0.
inline const Signature kF8LegacyPinThread{
    kF8ErrorName, 0, std::string(kF8Message) + " (its current device is 0); the trainer uses only device 1",
    ProcessWithPid("pin-memory thread"), "pin_memory"};

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_F8_SIGNATURE_H_
