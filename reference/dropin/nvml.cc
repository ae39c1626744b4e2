// The stand-in libnvidia-ml.so.1: the NVML calls PyTorch makes
// (../shared/cuda-abi/torch-nvml-names.txt), over the same simulated machine
// as the stand-in driver. NVML initializes no CUDA and ignores
// CUDA_VISIBLE_DEVICES (PyTorch applies it to NVML's list itself), so a
// process may count devices through it and still fork working children.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>

#include "reference/runtime/simulated_machine.h"

namespace {

using nvmlReturn_t = int;
constexpr nvmlReturn_t kSuccess = 0;
constexpr nvmlReturn_t kUninitialized = 1;
constexpr nvmlReturn_t kInvalidArgument = 2;
constexpr nvmlReturn_t kNotSupported = 3;
constexpr nvmlReturn_t kInsufficientSize = 7;
constexpr nvmlReturn_t kNotFound = 6;
constexpr nvmlReturn_t kUnknown = 999;

struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

// Devices are handles into this array, by physical ordinal.
constexpr int kMaxDevices = 64;
char g_devices[kMaxDevices];

std::atomic<int> g_init_count{0};

const faultline::SimulatedMachine& Machine() {
  static const faultline::SimulatedMachine machine = faultline::ReadSimulatedMachine();
  return machine;
}

int OrdinalOf(void* device) {
  const char* p = static_cast<const char*>(device);
  const int ordinal = p >= g_devices && p < g_devices + kMaxDevices ? static_cast<int>(p - g_devices) : -1;
  return ordinal < Machine().devices ? ordinal : -1;
}

nvmlReturn_t NotSupported(const char* name) {
  static std::atomic<bool> said{false};
  if (!said.exchange(true)) {
    std::fprintf(stderr, "simcuda: %s is not simulated by the stand-in NVML; it returns NVML_ERROR_NOT_SUPPORTED\n",
                 name);
  }
  return kNotSupported;
}

}  // namespace

extern "C" {

int nvmlInit_v2() {
  if (!Machine().error.empty()) {
    std::fprintf(stderr, "simcuda: bad configuration: %s\n", Machine().error.c_str());
    return kUnknown;
  }
  g_init_count.fetch_add(1);
  return kSuccess;
}
int nvmlInit() { return nvmlInit_v2(); }
int nvmlInitWithFlags(unsigned int) { return nvmlInit_v2(); }

int nvmlShutdown() {
  int count = g_init_count.load();
  while (count > 0 && !g_init_count.compare_exchange_weak(count, count - 1)) {
  }
  return count > 0 ? kSuccess : kUninitialized;
}

const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case kSuccess: return "Success";
    case kUninitialized: return "Uninitialized";
    case kInvalidArgument: return "Invalid Argument";
    case kNotSupported: return "Not Supported";
    case kNotFound: return "Not Found";
    case kInsufficientSize: return "Insufficient Size";
    default: return "Unknown Error";
  }
}

int nvmlSystemGetCudaDriverVersion_v2(int* version) {
  if (version == nullptr) return kInvalidArgument;
  *version = 13000;  // the stand-in driver's cuDriverGetVersion
  return kSuccess;
}
int nvmlSystemGetCudaDriverVersion(int* version) { return nvmlSystemGetCudaDriverVersion_v2(version); }

int nvmlDeviceGetCount_v2(unsigned int* count) {
  if (g_init_count.load() == 0) return kUninitialized;
  if (count == nullptr) return kInvalidArgument;
  *count = static_cast<unsigned int>(Machine().devices);
  return kSuccess;
}
int nvmlDeviceGetCount(unsigned int* count) { return nvmlDeviceGetCount_v2(count); }

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  if (g_init_count.load() == 0) return kUninitialized;
  if (device == nullptr || index >= static_cast<unsigned int>(Machine().devices)) return kInvalidArgument;
  *device = &g_devices[index];
  return kSuccess;
}
int nvmlDeviceGetHandleByIndex(unsigned int index, void** device) {
  return nvmlDeviceGetHandleByIndex_v2(index, device);
}

int nvmlDeviceGetHandleByUUID(const char* uuid, void** device) {
  if (g_init_count.load() == 0) return kUninitialized;
  if (uuid == nullptr || device == nullptr) return kInvalidArgument;
  for (int d = 0; d < Machine().devices; ++d) {
    if (faultline::SimulatedUuid(d) == uuid) {
      *device = &g_devices[d];
      return kSuccess;
    }
  }
  return kNotFound;
}

int nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, void** device) {
  if (g_init_count.load() == 0) return kUninitialized;
  if (bus_id == nullptr || device == nullptr) return kInvalidArgument;
  for (int d = 0; d < Machine().devices; ++d) {
    char text[32];
    std::snprintf(text, sizeof(text), "00000000:%02X:00.0", 0x18 + d);  // device_attributes.cc's PCI_BUS_ID
    if (strcasecmp(text, bus_id) == 0) {
      *device = &g_devices[d];
      return kSuccess;
    }
  }
  return kNotFound;
}

int nvmlDeviceGetUUID(void* device, char* uuid, unsigned int length) {
  if (g_init_count.load() == 0) return kUninitialized;
  const int d = OrdinalOf(device);
  if (d < 0 || uuid == nullptr) return kInvalidArgument;
  const std::string text = faultline::SimulatedUuid(d);
  if (length < text.size() + 1) return kInsufficientSize;
  std::memcpy(uuid, text.c_str(), text.size() + 1);
  return kSuccess;
}

int nvmlDeviceGetName(void* device, char* name, unsigned int length) {
  if (g_init_count.load() == 0) return kUninitialized;
  if (OrdinalOf(device) < 0 || name == nullptr) return kInvalidArgument;
  if (length < Machine().name.size() + 1) return kInsufficientSize;
  std::memcpy(name, Machine().name.c_str(), Machine().name.size() + 1);
  return kSuccess;
}

// NVML sees the device, not a process: nothing simulated runs on it.
int nvmlDeviceGetMemoryInfo(void* device, nvmlMemory_t* memory) {
  if (g_init_count.load() == 0) return kUninitialized;
  if (OrdinalOf(device) < 0 || memory == nullptr) return kInvalidArgument;
  memory->total = Machine().memory_bytes;
  memory->free = Machine().memory_bytes;
  memory->used = 0;
  return kSuccess;
}

int nvmlDeviceGetComputeRunningProcesses(void* device, unsigned int* count, void*) {
  if (g_init_count.load() == 0) return kUninitialized;
  if (OrdinalOf(device) < 0 || count == nullptr) return kInvalidArgument;
  *count = 0;
  return kSuccess;
}

int nvmlDeviceGetClockInfo(void*, int, unsigned int*) { return NotSupported("nvmlDeviceGetClockInfo"); }
int nvmlDeviceGetGpuFabricInfoV(void*, void*) { return NotSupported("nvmlDeviceGetGpuFabricInfoV"); }
int nvmlDeviceGetNvLinkRemoteDeviceType(void*, unsigned int, int*) {
  return NotSupported("nvmlDeviceGetNvLinkRemoteDeviceType");
}
int nvmlDeviceGetNvLinkRemotePciInfo_v2(void*, unsigned int, void*) {
  return NotSupported("nvmlDeviceGetNvLinkRemotePciInfo_v2");
}
int nvmlDeviceGetP2PStatus(void*, void*, int, int*) { return NotSupported("nvmlDeviceGetP2PStatus"); }
int nvmlDeviceGetPowerUsage(void*, unsigned int*) { return NotSupported("nvmlDeviceGetPowerUsage"); }
int nvmlDeviceGetTemperature(void*, int, unsigned int*) { return NotSupported("nvmlDeviceGetTemperature"); }
int nvmlDeviceGetUtilizationRates(void*, void*) { return NotSupported("nvmlDeviceGetUtilizationRates"); }

}  // extern "C"
