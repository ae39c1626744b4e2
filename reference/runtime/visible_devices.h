// Provides CountVisibleDevices: how many devices CUDA_VISIBLE_DEVICES leaves
// visible, by the driver's rules. Shared by simcuda and by the CUDA
// backend's NVML count (NVML itself ignores the variable).
#ifndef FAULTLINE_REFERENCE_RUNTIME_VISIBLE_DEVICES_H_
#define FAULTLINE_REFERENCE_RUNTIME_VISIBLE_DEVICES_H_

#include <string>
#include <vector>

namespace faultline {

// Applies CUDA_VISIBLE_DEVICES (`mask`) to the physical devices whose UUIDs
// are `uuids` (in ordinal order) and returns the number visible. The rules
// are those PyTorch copies from the driver (torch/cuda/__init__.py,
// `_parse_visible_devices` and `_device_count_nvml`):
// - a list whose first entry starts with "GPU-" is a list of UUIDs, each
//   naming the one device whose UUID it prefixes; it is cut at the first
//   entry that is not a "GPU-" entry or names no device or several;
// - any other list is of ordinals, each read like strtoul (leading
//   whitespace, a sign, then the leading digits: "1gpu2" is 1, "-0" is 0);
//   the list ends at the first entry with no digits or a negative value,
//   a repeat anywhere before that end hides every device, and then the
//   count stops at the first ordinal past the devices ("0,5,0" is none,
//   "0,5,1" is one);
// - in a list of UUIDs, a UUID named twice hides every device;
// - a MIG instance's UUID ("MIG-...") names no device (no MIG is modelled):
//   a list that starts with one is a list of ordinals without digits, so
//   none is visible, and after ordinals or GPU UUIDs it ends the list.
// An empty mask hides every device.
int CountVisibleDevices(const std::string& mask, const std::vector<std::string>& uuids);

// What CUDA_VISIBLE_DEVICES leaves visible, and whether it named a device
// twice: the driver then fails initialization with cudaErrorInvalidDevice
// (101), not cudaErrorNoDevice (100) (seen on an H100 with "0,0",
// docs/gpu-validation.md 2026-11-26).
struct VisibleDevices {
  int count = 0;
  bool names_a_device_twice = false;
  // The physical ordinal behind each visible device, in visible order
  // (count entries): "1,0" makes physical 1 the visible device 0.
  std::vector<int> physical;
};
VisibleDevices ReadVisibleDevices(const std::string& mask, const std::vector<std::string>& uuids);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_RUNTIME_VISIBLE_DEVICES_H_
