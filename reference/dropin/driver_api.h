// Declares the CUDA driver API types the stand-in libcuda.so.1 uses, with
// the toolkit's values (cuda.h), without cuda.h's macros that rename
// functions to their _v2 forms: each exported name is spelled out here.
#ifndef FAULTLINE_REFERENCE_DROPIN_DRIVER_API_H_
#define FAULTLINE_REFERENCE_DROPIN_DRIVER_API_H_

#include <driver_types.h>

#include <cstddef>
#include <cstdint>

namespace faultline::dropin {

using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUstream = void*;
using CUdeviceptr = unsigned long long;
// CUuuid comes from driver_types.h (the runtime's cudaUUID_t is the same struct).

// CUresult values (cuda.h) the stand-in returns.
constexpr CUresult kSuccess = 0;
constexpr CUresult kErrorInvalidValue = 1;
constexpr CUresult kErrorNotInitialized = 3;
constexpr CUresult kErrorInvalidDevice = 101;
constexpr CUresult kErrorInvalidContext = 201;
constexpr CUresult kErrorNotFound = 500;
constexpr CUresult kErrorNotSupported = 801;

// CUmemorytype and CUpointer_attribute values (cuda.h).
constexpr int kMemoryTypeHost = 1;
constexpr int kMemoryTypeDevice = 2;
constexpr int kPointerAttributeContext = 1;
constexpr int kPointerAttributeMemoryType = 2;
constexpr int kPointerAttributeDevicePointer = 3;
constexpr int kPointerAttributeHostPointer = 4;
constexpr int kPointerAttributeIsManaged = 8;
constexpr int kPointerAttributeDeviceOrdinal = 9;
constexpr int kPointerAttributeMapped = 13;

}  // namespace faultline::dropin

#endif  // FAULTLINE_REFERENCE_DROPIN_DRIVER_API_H_
