// Provides the simulated machine's configuration: how many devices simcuda
// simulates and what they are, from the environment. Read by the simcuda
// model and by the stand-in NVML library, which must agree.
#ifndef FAULTLINE_REFERENCE_RUNTIME_SIMULATED_MACHINE_H_
#define FAULTLINE_REFERENCE_RUNTIME_SIMULATED_MACHINE_H_

#include <cstddef>
#include <string>

namespace faultline {

struct SimulatedMachine {
  int devices = 1;                         // FAULTLINE_SIMCUDA_DEVICES, 0..64
  size_t memory_bytes = size_t{16} << 30;  // FAULTLINE_SIMCUDA_MEMORY_BYTES, per device
  std::string name = "simcuda GPU";        // FAULTLINE_SIMCUDA_DEVICE_NAME, at most 255 bytes
  int major = 9;                           // FAULTLINE_SIMCUDA_COMPUTE_CAPABILITY, "MAJOR.MINOR"
  int minor = 0;
  // Non-empty when a variable is malformed: it names the variable, its
  // value and what was expected. The defaults stand in for that variable,
  // and every CUDA call fails with this message (the first one prints it).
  std::string error;
};

// Reads the FAULTLINE_SIMCUDA_* variables above.
SimulatedMachine ReadSimulatedMachine();

// The UUID of physical device `ordinal`, as the driver prints it
// ("GPU-5eed0000-0000-4000-8000-000000000001").
std::string SimulatedUuid(int ordinal);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_RUNTIME_SIMULATED_MACHINE_H_
