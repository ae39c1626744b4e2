// Provides the attributes of one simulated device (cuDeviceGetAttribute,
// cudaDeviceGetAttribute: both enumerations share their values).
#ifndef FAULTLINE_REFERENCE_DROPIN_DEVICE_ATTRIBUTES_H_
#define FAULTLINE_REFERENCE_DROPIN_DEVICE_ATTRIBUTES_H_

#include <optional>

namespace faultline::dropin {

// Returns attribute `attribute` (a CUdevice_attribute value) of a device
// of compute capability major.minor whose physical ordinal is `physical`,
// or nothing for an attribute simcuda does not describe. The figures are an
// H100 SXM's (the device the conformance runs use), so that code sizing
// launches or buffers from them sees plausible values.
std::optional<int> DeviceAttribute(int attribute, int major, int minor, int physical);

}  // namespace faultline::dropin

#endif  // FAULTLINE_REFERENCE_DROPIN_DEVICE_ATTRIBUTES_H_
