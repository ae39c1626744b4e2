// Implements ReadSimulatedMachine.
#include "reference/runtime/simulated_machine.h"

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>

#include "reference/base/parse_int.h"

namespace faultline {
namespace {

constexpr size_t kMaxSimulatedDevices = 64;

// Reads variable `name` as a whole number in `min`..`max` into *value;
// records the first malformed variable in *error.
void ReadSize(const char* name, size_t min, size_t max, size_t* value, std::string* error) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return;
  const std::optional<size_t> parsed = ParseWholeNonNegative<size_t>(text);
  if (parsed && *parsed >= min && *parsed <= max) {
    *value = *parsed;
  } else if (error->empty()) {
    *error = std::string(name) + "='" + text + "': expected an integer in " + std::to_string(min) + ".." +
             std::to_string(max);
  }
}

}  // namespace

SimulatedMachine ReadSimulatedMachine() {
  SimulatedMachine m;
  size_t devices = static_cast<size_t>(m.devices);
  ReadSize("FAULTLINE_SIMCUDA_DEVICES", 0, kMaxSimulatedDevices, &devices, &m.error);
  m.devices = static_cast<int>(devices);
  ReadSize("FAULTLINE_SIMCUDA_MEMORY_BYTES", 1, std::numeric_limits<size_t>::max(), &m.memory_bytes, &m.error);
  if (const char* name = std::getenv("FAULTLINE_SIMCUDA_DEVICE_NAME"); name != nullptr && *name != '\0') {
    const std::string text = name;
    if (text.size() <= 255) {
      m.name = text;
    } else if (m.error.empty()) {
      m.error = "FAULTLINE_SIMCUDA_DEVICE_NAME is " + std::to_string(text.size()) +
                " bytes long: expected at most 255 (cudaDeviceProp::name holds 256)";
    }
  }
  if (const char* text = std::getenv("FAULTLINE_SIMCUDA_COMPUTE_CAPABILITY"); text != nullptr && *text != '\0') {
    const std::string value = text;
    const size_t dot = value.find('.');
    std::optional<int> major, minor;
    if (dot != std::string::npos) {
      major = ParseWholeNonNegative<int>(value.substr(0, dot));
      minor = ParseWholeNonNegative<int>(value.substr(dot + 1));
    }
    if (major && minor && *major >= 1 && *major <= 99 && *minor <= 9) {
      m.major = *major;
      m.minor = *minor;
    } else if (m.error.empty()) {
      m.error = "FAULTLINE_SIMCUDA_COMPUTE_CAPABILITY='" + value + "': expected MAJOR.MINOR such as 9.0";
    }
  }
  return m;
}

std::string SimulatedUuid(int ordinal) {
  char text[64];
  std::snprintf(text, sizeof(text), "GPU-5eed0000-0000-4000-8000-%012x", ordinal);
  return text;
}

}  // namespace faultline
